"""A run replays a set of its own project, a result is of a case of its run's set; old case errors are
masked; judge verdicts are cached per project.

Runs referenced their set, and results their case, by id alone: a run of one project could name
another's set, and a run's result a case of another set (of any project). The queries refused such rows;
now the schema does. A run's foreign key to its set is on ``(set id, project)``. A result carries its
run's set (``eval_results.eval_set_id``, filled from its run) with foreign keys on ``(run id, set id)``
and ``(case id, set id)``: the eval engine stores a run's results only for the cases of the set version
it replays. No evallens code wrote a crossing row: any found (written by hand) is deleted first, as it
means nothing in its own project: a run naming another project's set, with its results and the tags and
gate reports on it, and a result of a case of another set.

Case errors stored before the eval runner masked credentials in them (``eval_results.error``, and the
first one a failed run's reason quotes after ``; first:``) can hold a key an API or proxy echoed
(``Incorrect API key provided: sk-...``), which 0015, masking URLs only, left. They are masked as the
runner masks a case's error now (``evallens.credentials.mask_credentials``); the rest of a run's reason
was masked by 0015 and stays as it is (a run id there is no credential). The downgrade keeps the masking.

Judge verdicts were cached by content alone, so one project's replay was served verdicts on another's
questions and answers. The cache key now holds the project, and so does a column. A verdict cached
before cannot say whose it is: the cache is emptied (the judge is asked again), on the way down as well.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from evallens.credentials import mask_credentials

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_KEY_COMMENT = "sha256 of judge model, prompt version, question, reference, answer"
KEY_COMMENT = "sha256 of project, judge model, prompt version, question, reference, answer"
# how a failed run's reason quotes its first failed request (evals.runner.run._check_error_rate)
FIRST_ERROR = "; first: "


def upgrade() -> None:
    _set_boundaries()
    _mask_case_errors(op.get_bind())
    _scope_judge_verdicts()


def downgrade() -> None:
    op.execute("DELETE FROM judge_verdicts")  # keyed with their project: the old keys never match them
    op.drop_column("judge_verdicts", "project")
    op.alter_column(
        "judge_verdicts",
        "key",
        existing_type=sa.Text(),
        comment=OLD_KEY_COMMENT,
        existing_comment=KEY_COMMENT,
    )
    op.drop_constraint(op.f("fk_eval_results_case_id_eval_cases"), "eval_results", type_="foreignkey")
    op.drop_constraint(op.f("fk_eval_results_run_id_eval_runs"), "eval_results", type_="foreignkey")
    op.drop_column("eval_results", "eval_set_id")
    op.create_foreign_key(
        op.f("fk_eval_results_run_id_eval_runs"), "eval_results", "eval_runs", ["run_id"], ["id"],
        ondelete="CASCADE",
    )  # fmt: skip
    op.create_foreign_key(
        op.f("fk_eval_results_case_id_eval_cases"), "eval_results", "eval_cases", ["case_id"], ["id"]
    )
    op.drop_constraint(op.f("fk_eval_runs_eval_set_id_eval_sets"), "eval_runs", type_="foreignkey")
    op.create_foreign_key(
        op.f("fk_eval_runs_eval_set_id_eval_sets"), "eval_runs", "eval_sets", ["eval_set_id"], ["id"]
    )
    op.drop_constraint(op.f("uq_eval_cases_id_eval_set_id"), "eval_cases", type_="unique")
    op.drop_constraint(op.f("uq_eval_runs_id_eval_set_id"), "eval_runs", type_="unique")
    op.drop_constraint(op.f("uq_eval_sets_id_project"), "eval_sets", type_="unique")


def _set_boundaries() -> None:
    # a run of another project's set goes with its results, tags and gate reports (their foreign keys
    # cascade)
    op.execute(
        "DELETE FROM eval_runs r USING eval_sets s WHERE s.id = r.eval_set_id AND s.project <> r.project"
    )
    op.add_column(
        "eval_results",
        sa.Column("eval_set_id", sa.Integer(), nullable=True, comment="the run's set, which the case is of"),
    )
    op.execute("UPDATE eval_results e SET eval_set_id = r.eval_set_id FROM eval_runs r WHERE r.id = e.run_id")
    op.execute(
        "DELETE FROM eval_results e USING eval_cases c"
        " WHERE c.id = e.case_id AND c.eval_set_id <> e.eval_set_id"
    )
    op.alter_column("eval_results", "eval_set_id", nullable=False)
    op.create_unique_constraint(op.f("uq_eval_sets_id_project"), "eval_sets", ["id", "project"])
    op.create_unique_constraint(op.f("uq_eval_runs_id_eval_set_id"), "eval_runs", ["id", "eval_set_id"])
    op.create_unique_constraint(op.f("uq_eval_cases_id_eval_set_id"), "eval_cases", ["id", "eval_set_id"])
    op.drop_constraint(op.f("fk_eval_runs_eval_set_id_eval_sets"), "eval_runs", type_="foreignkey")
    op.create_foreign_key(
        op.f("fk_eval_runs_eval_set_id_eval_sets"), "eval_runs", "eval_sets",
        ["eval_set_id", "project"], ["id", "project"],
    )  # fmt: skip
    op.drop_constraint(op.f("fk_eval_results_run_id_eval_runs"), "eval_results", type_="foreignkey")
    op.create_foreign_key(
        op.f("fk_eval_results_run_id_eval_runs"), "eval_results", "eval_runs",
        ["run_id", "eval_set_id"], ["id", "eval_set_id"], ondelete="CASCADE",
    )  # fmt: skip
    op.drop_constraint(op.f("fk_eval_results_case_id_eval_cases"), "eval_results", type_="foreignkey")
    op.create_foreign_key(
        op.f("fk_eval_results_case_id_eval_cases"), "eval_results", "eval_cases",
        ["case_id", "eval_set_id"], ["id", "eval_set_id"],
    )  # fmt: skip


def _mask_case_errors(connection: sa.Connection) -> None:
    """Mask a case's error, and the first one a failed run's reason quotes, as the eval runner masks a
    case's error now (``mask_credentials``, in ``masked_excerpt``)."""
    results = connection.execute(sa.text("SELECT id, error FROM eval_results WHERE error IS NOT NULL"))
    for result_id, error in results.all():
        if mask_credentials(error) != error:
            connection.execute(
                sa.text("UPDATE eval_results SET error = :e WHERE id = :id"),
                {"e": mask_credentials(error), "id": result_id},
            )
    runs = connection.execute(
        sa.text("SELECT id, error FROM eval_runs WHERE strpos(error, :first) > 0"), {"first": FIRST_ERROR}
    )
    for run_id, error in runs.all():
        reason, first, case_error = error.partition(FIRST_ERROR)
        masked = f"{reason}{first}{mask_credentials(case_error)}"
        if masked != error:
            connection.execute(
                sa.text("UPDATE eval_runs SET error = :e WHERE id = :id"), {"e": masked, "id": run_id}
            )


def _scope_judge_verdicts() -> None:
    # a verdict cached before says nothing of whose questions and answers it judged: kept under any one
    # project, it would serve that project with another's; the cache is refilled by asking the judge again
    op.execute("DELETE FROM judge_verdicts")
    op.add_column(
        "judge_verdicts",
        sa.Column("project", sa.Text(), nullable=False, comment="whose questions and answers were judged"),
    )
    op.alter_column(
        "judge_verdicts",
        "key",
        existing_type=sa.Text(),
        comment=KEY_COMMENT,
        existing_comment=OLD_KEY_COMMENT,
    )
