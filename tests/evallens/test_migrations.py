"""Migrations: up, down, up again; models and migrations agree; a failing migration changes nothing."""

import shutil
from datetime import date
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect, text

from evallens.db import create_db_engine
from evallens.db.migrate import (
    MIGRATIONS_DIR,
    MigrationFailed,
    alembic_config,
    current_revision,
    downgrade,
    head_revision,
    upgrade,
)
from evallens.db.partitions import create_span_partitions

EXPECTED_TABLES = {
    "spans",
    "genai_content",
    "trace_summaries",
    "span_rollups",
    "span_dimensions",
    "metric_samples",
    "model_prices",
    "eval_sets",
    "eval_cases",
    "eval_runs",
    "eval_results",
    "eval_tags",
    "gate_reports",
    "documents",
    "chunks",
    "projects",
    "api_keys",
    "collector_quarantine",
}


def table_names(url: str) -> set[str]:
    engine = create_db_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(empty_database_url: str) -> None:
    upgrade(empty_database_url)
    assert table_names(empty_database_url) >= EXPECTED_TABLES

    downgrade(empty_database_url, "base")
    assert table_names(empty_database_url) == {"alembic_version"}

    upgrade(empty_database_url)
    engine = create_db_engine(empty_database_url)
    assert current_revision(engine) == head_revision()
    engine.dispose()
    assert table_names(empty_database_url) >= EXPECTED_TABLES


def test_models_and_migrations_agree(database_url: str) -> None:
    # alembic check raises when autogenerate would produce any operation
    command.check(alembic_config(database_url))


FAILING_REVISION = """
from alembic import op

revision = "ffffffffffff"
down_revision = {head!r}
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE TABLE half_written (id int)")
    op.execute("SELECT 1 / 0")


def downgrade() -> None:
    pass
"""


def test_failing_migration_leaves_previous_revision(empty_database_url: str, tmp_path: Path) -> None:
    upgrade(empty_database_url)
    head = head_revision()
    scripts = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, scripts)
    (scripts / "versions" / "ffffffffffff_fails.py").write_text(FAILING_REVISION.format(head=head))

    with pytest.raises(MigrationFailed, match="division by zero"):
        upgrade(empty_database_url, script_location=scripts)

    engine = create_db_engine(empty_database_url)
    assert current_revision(engine) == head
    engine.dispose()
    assert "half_written" not in table_names(empty_database_url)


def test_spans_of_two_projects_with_one_identity_survive_a_downgrade(empty_database_url: str) -> None:
    """0003 puts the project in the spans key; going back keeps one of two rows the old key cannot hold."""
    upgrade(empty_database_url)
    engine = create_db_engine(empty_database_url)
    row = (
        "INSERT INTO spans (trace_id, span_id, start_time, end_time, duration_ms, name, kind, status_code,"
        " attributes, resource, events, project) VALUES ('{t}', '{s}', '2026-01-01T00:00:00Z',"
        " '2026-01-01T00:00:01Z', 1000, 'n', 0, 0, '{{}}', '{{}}', '[]', '{p}')"
    )
    with engine.begin() as connection:
        create_span_partitions(connection, [date(2026, 1, 1)])
        for project in ("alpha", "beta"):
            connection.execute(text(row.format(t="a" * 32, s="b" * 16, p=project)))
    engine.dispose()
    downgrade(empty_database_url, "0002")
    engine = create_db_engine(empty_database_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT project FROM spans")).scalars().all() == ["alpha"]
    engine.dispose()
    upgrade(empty_database_url)


BETA_REFUNDS = "INSERT INTO documents (project, id, text, content_hash) VALUES ('beta', 'refunds', 'B.', 'b')"


def test_documents_keep_their_chunks_and_become_the_default_projects(empty_database_url: str) -> None:
    """0011 puts the project in the documents key: stored documents and chunks stay, as the default
    project's; afterwards another project may hold a document of the same id; going back keeps the
    default project's one."""
    upgrade(empty_database_url, "0010")
    engine = create_db_engine(empty_database_url)
    vector = "[" + ",".join(["0.1"] * 384) + "]"
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO documents (id, text, content_hash) VALUES ('refunds', 'Refunds.', 'h')")
        )
        connection.execute(
            text(
                "INSERT INTO chunks (id, document_id, ordinal, text, num_tokens, embedding)"
                " VALUES ('c1', 'refunds', 0, 'Refunds.', 2, CAST(:v AS vector))"
            ),
            {"v": vector},
        )
    engine.dispose()
    upgrade(empty_database_url)
    engine = create_db_engine(empty_database_url)
    with engine.begin() as connection:
        assert connection.execute(text("SELECT project, id, text FROM documents")).all() == [
            ("default", "refunds", "Refunds.")
        ]
        assert connection.execute(text("SELECT project, id, document_id FROM chunks")).all() == [
            ("default", "c1", "refunds")
        ]
        connection.execute(text(BETA_REFUNDS))
        connection.execute(
            text(
                "INSERT INTO chunks (project, id, document_id, ordinal, text, num_tokens, embedding)"
                " VALUES ('beta', 'c2', 'refunds', 0, 'B.', 1, CAST(:v AS vector))"
            ),
            {"v": vector},
        )
        connection.execute(text("DELETE FROM documents WHERE project = 'beta'"))  # cascades to its chunk only
        assert connection.execute(text("SELECT id FROM chunks")).scalars().all() == ["c1"]
        connection.execute(text(BETA_REFUNDS))
    engine.dispose()
    downgrade(empty_database_url, "0010")
    engine = create_db_engine(empty_database_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT project, id, text FROM documents")).all() == [
            ("default", "refunds", "Refunds.")
        ]
        assert connection.execute(text("SELECT id FROM chunks")).scalars().all() == ["c1"]
    engine.dispose()
    upgrade(empty_database_url)
