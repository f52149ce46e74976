"""A tag or gate report points at runs of its own project only; stored target and judge URLs are masked.

Tags and gate reports referenced runs by id alone, so a row of one project could name another's run
and the run lists, which join tags and gates to runs, would show it there. Foreign keys on
``(run id, project)`` now refuse such a row. No evallens code wrote one: any found (written by hand) is
deleted first, as it means nothing in its own project.

Runs stored before the eval engine masked URLs hold the target's and the judge's URL with its user info
and credential query parameters (``http://user:password@host``, ``?api_key=...``): in the run's
endpoint, in a target's config made from its URL (no ``/v1/config``), in the run's scoring and in its
error. They are masked as ``evallens.credentials.masked_url`` masks them now, and so are the URLs
quoted in the hints of stored gate reports (config changes). A config fingerprint computed from the
config is recomputed from the masked config, as the eval engine computes it now
(``evals.target.fingerprint_of``), so that a new run against the same target has the same fingerprint.
The masked scoring equals a new run's, so an old baseline and a new candidate still compare (before,
their judge endpoints differed and the gate refused them as scored differently). Masking cannot be
undone: the downgrade keeps it.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06 19:00:00.000000
"""

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from evallens.credentials import masked_url

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RUN_REFERENCES = {
    "eval_tags": ["run_id"],
    "gate_reports": ["baseline_run_id", "candidate_run_id"],
}


def upgrade() -> None:
    for table, columns in RUN_REFERENCES.items():
        crossing = " OR ".join(f"(r.id = t.{column} AND r.project <> t.project)" for column in columns)
        op.execute(f"DELETE FROM {table} t USING eval_runs r WHERE {crossing}")
    op.create_unique_constraint(op.f("uq_eval_runs_id_project"), "eval_runs", ["id", "project"])
    for table, columns in RUN_REFERENCES.items():
        for column in columns:
            name = op.f(f"fk_{table}_{column}_eval_runs")
            op.drop_constraint(name, table, type_="foreignkey")
            op.create_foreign_key(
                name, table, "eval_runs", [column, "project"], ["id", "project"], ondelete="CASCADE"
            )
    connection = op.get_bind()
    _mask_runs(connection)
    _mask_gate_hints(connection)


def downgrade() -> None:
    for table, columns in RUN_REFERENCES.items():
        for column in columns:
            name = op.f(f"fk_{table}_{column}_eval_runs")
            op.drop_constraint(name, table, type_="foreignkey")
            op.create_foreign_key(name, table, "eval_runs", [column], ["id"], ondelete="CASCADE")
    op.drop_constraint(op.f("uq_eval_runs_id_project"), "eval_runs", type_="unique")


def _fingerprint_of(value: Any) -> str:
    """``evals.target.fingerprint_of`` at this revision (a migration never imports the eval engine)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# a URL quoted in a message: each is masked as masked_url masks it, and nothing else of the message (a
# run id there is no credential)
_QUOTED_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s'\"]+")


def _masked_urls_in(message: str) -> str:
    return _QUOTED_URL.sub(lambda url: masked_url(url[0]), message)


def _masked(url: object) -> object:
    return masked_url(url) if isinstance(url, str) else url


def _mask_runs(connection: sa.Connection) -> None:
    runs = connection.execute(
        sa.text(
            "SELECT id, endpoint, config->'endpoint', scoring->'judge'->'endpoint', error FROM eval_runs"
            " ORDER BY id"
        )
    )
    for run_id, endpoint, config_endpoint, judge_endpoint, error in runs.all():
        if masked_url(endpoint) != endpoint:
            connection.execute(
                sa.text("UPDATE eval_runs SET endpoint = :e WHERE id = :id"),
                {"e": masked_url(endpoint), "id": run_id},
            )
        if error is not None and _masked_urls_in(error) != error:
            connection.execute(
                sa.text("UPDATE eval_runs SET error = :e WHERE id = :id"),
                {"e": _masked_urls_in(error), "id": run_id},
            )
        if _masked(judge_endpoint) != judge_endpoint:
            connection.execute(
                sa.text(
                    "UPDATE eval_runs SET scoring = jsonb_set(scoring, '{judge,endpoint}',"
                    " to_jsonb(CAST(:e AS text))) WHERE id = :id"
                ),
                {"e": _masked(judge_endpoint), "id": run_id},
            )
        if _masked(config_endpoint) != config_endpoint:
            _mask_config(connection, run_id)


def _mask_config(connection: sa.Connection, run_id: object) -> None:
    """Mask the run's config endpoint; a fingerprint that was the config's hash becomes the masked one's
    (one the target reported in its ``/v1/config`` stays)."""
    config, fingerprint = connection.execute(
        sa.text("SELECT config, config_fingerprint FROM eval_runs WHERE id = :id"), {"id": run_id}
    ).one()
    masked = {**config, "endpoint": masked_url(config["endpoint"])}
    if fingerprint == _fingerprint_of(config):
        fingerprint = _fingerprint_of(masked)
    connection.execute(
        sa.text("UPDATE eval_runs SET config = :c, config_fingerprint = :f WHERE id = :id").bindparams(
            sa.bindparam("c", type_=postgresql.JSONB)
        ),
        {"c": masked, "f": fingerprint, "id": run_id},
    )


def _mask_gate_hints(connection: sa.Connection) -> None:
    reports = connection.execute(
        sa.text("SELECT id, report->'hints' FROM gate_reports WHERE jsonb_typeof(report->'hints') = 'array'")
    )
    for report_id, hints in reports.all():
        masked = [
            {**hint, "message": _masked_urls_in(hint["message"])}
            if isinstance(hint, dict) and isinstance(hint.get("message"), str)
            else hint
            for hint in hints
        ]
        if masked != hints:
            connection.execute(
                sa.text(
                    "UPDATE gate_reports SET report = jsonb_set(report, '{hints}', :h) WHERE id = :id"
                ).bindparams(sa.bindparam("h", type_=postgresql.JSONB)),
                {"h": masked, "id": report_id},
            )
