"""A tag or gate report points at runs of its own project only.

Tags and gate reports referenced runs by id alone, so a row of one project could name another's run
and the run lists, which join tags and gates to runs, would show it there. Foreign keys on
``(run id, project)`` now refuse such a row. No evallens code wrote one: any found (written by hand) is
deleted first, as it means nothing in its own project.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06 19:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
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


def downgrade() -> None:
    for table, columns in RUN_REFERENCES.items():
        for column in columns:
            name = op.f(f"fk_{table}_{column}_eval_runs")
            op.drop_constraint(name, table, type_="foreignkey")
            op.create_foreign_key(name, table, "eval_runs", [column], ["id"], ondelete="CASCADE")
    op.drop_constraint(op.f("uq_eval_runs_id_project"), "eval_runs", type_="unique")
