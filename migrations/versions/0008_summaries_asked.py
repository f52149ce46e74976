"""Trace summaries say whether the trace answered a user (``asked``); an index covers mining's scans.

Bad-case mining counts as production only traces that carry a user question: a span with
``gen_ai.input.messages`` or OpenInference ``input.value``, or a GenAI content log event of
direction ``input`` (table ``genai_content``). Knowledge-base uploads (``documents.upsert``) and
other traffic without a question are no longer candidates and no longer enter the window's latency
and cost percentiles. ``asked`` merges by "or" like the other flags: the spans trigger of 0006 is
replaced by the same statements with the column added (a trace whose question arrived earlier as a
log event is found by its trace id), and a new statement trigger on ``genai_content`` marks the
summaries of traces whose question arrives as a log event after their spans.

The partial index ``ix_trace_summaries_production`` holds exactly the production summaries and
every column mining reads from them, so the window's count, percentiles and flagged traces come
from an index-only scan instead of the table.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 11:00:00.000000
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ASKED = (
    "coalesce(bool_or(attributes ? 'gen_ai.input.messages' OR attributes ? 'input.value'), false)"
    " OR EXISTS (SELECT 1 FROM genai_content g WHERE g.project = {source}.project"
    " AND g.trace_id = {source}.trace_id AND g.direction = 'input')"
)
PRODUCTION = "asked AND eval_run_id IS NULL AND rated_trace_id IS NULL AND latency_ms IS NOT NULL"
COVERED = [
    "trace_id", "end_time", "latency_ms", "cost_usd", "error", "degraded", "timeout", "guarded", "rag",
    "cited", "refusal_hint", "own_feedback",
]  # fmt: skip


def _revision_0006() -> ModuleType:
    """The applied 0006 migration, whose fold statements this one extends (never edited)."""
    path = Path(__file__).with_name("0006_trace_summaries.py")
    spec = importlib.util.spec_from_file_location("evallens_migration_0006", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _replace_once(statement: str, old: str, new: str) -> str:
    assert statement.count(old) == 1, old
    return statement.replace(old, new)


def _fold(source: str, with_asked: bool) -> str:
    """0006's fold of the spans of ``source``, with ``asked`` folded too when ``with_asked``."""
    base = _revision_0006()
    statements = base._fold(source)
    if not with_asked:
        return str(statements)
    statements = _replace_once(statements, f"({base.SUMMARY_COLUMNS})", f"({base.SUMMARY_COLUMNS}, asked)")
    statements = _replace_once(
        statements,
        f"{base.SUMMARY_VALUES} FROM {source}",
        f"{base.SUMMARY_VALUES.rstrip()},\n  {ASKED.format(source=source)}\nFROM {source}",
    )
    return _replace_once(
        statements,
        f"SET {base.SUMMARY_MERGE};",
        f"SET {base.SUMMARY_MERGE}, asked = s.asked OR excluded.asked;",
    )


def _replace_function(with_asked: bool) -> None:
    op.execute(
        "CREATE OR REPLACE FUNCTION evallens_fold_spans() RETURNS trigger LANGUAGE plpgsql AS $fold$\n"
        f"BEGIN\n{_fold('new_spans', with_asked)}\nRETURN NULL;\nEND\n$fold$"
    )


def upgrade() -> None:
    op.add_column(
        "trace_summaries",
        sa.Column(
            "asked",
            sa.Boolean(),
            nullable=False,
            server_default=sa.false(),
            comment="a span or content event carries a user question",
        ),
    )
    op.alter_column("trace_summaries", "asked", server_default=None)
    op.execute(
        "UPDATE trace_summaries s SET asked = true FROM (SELECT DISTINCT project, trace_id FROM spans"
        " WHERE attributes ? 'gen_ai.input.messages' OR attributes ? 'input.value'"
        " UNION SELECT project, trace_id FROM genai_content WHERE direction = 'input') a"
        " WHERE s.project = a.project AND s.trace_id = a.trace_id"
    )
    _replace_function(with_asked=True)
    op.execute(
        "CREATE FUNCTION evallens_mark_asked() RETURNS trigger LANGUAGE plpgsql AS $mark$\nBEGIN\n"
        "UPDATE trace_summaries s SET asked = true FROM (SELECT DISTINCT project, trace_id FROM new_content"
        " WHERE direction = 'input') a WHERE s.project = a.project AND s.trace_id = a.trace_id"
        " AND NOT s.asked;\n"
        "RETURN NULL;\nEND\n$mark$"
    )
    op.execute(
        "CREATE TRIGGER genai_content_mark_asked AFTER INSERT ON genai_content REFERENCING NEW TABLE AS"
        " new_content FOR EACH STATEMENT EXECUTE FUNCTION evallens_mark_asked()"
    )
    op.create_index(
        "ix_trace_summaries_production",
        "trace_summaries",
        ["project", "start_time"],
        postgresql_include=COVERED,
        postgresql_where=sa.text(PRODUCTION),
    )


def downgrade() -> None:
    op.drop_index("ix_trace_summaries_production", table_name="trace_summaries")
    op.execute("DROP TRIGGER genai_content_mark_asked ON genai_content")
    op.execute("DROP FUNCTION evallens_mark_asked()")
    _replace_function(with_asked=False)
    op.drop_column("trace_summaries", "asked")
