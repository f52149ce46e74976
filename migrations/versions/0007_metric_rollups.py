"""Per-minute and per-hour rollups of scraped metric samples, kept by a trigger; backfilled here.

A statement-level ``AFTER INSERT`` trigger on ``metric_samples`` folds the rows each statement
stored (its transition table) into ``metric_rollups``: per series (project, name, target, labels)
and bucket of 60 or 3600 seconds starting at whole UTC minutes and hours, the number of samples,
their sum and their maximum. Those merge by adding and by ``greatest``, so samples arriving late or
in several statements end in the row that folding them all at once gives. The Serving metrics page
reads them for windows wider than a few hours instead of bucketing every sample. An index on
``(project, time)`` finds a project's newest and oldest sample without reading its samples.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 05:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY = "project, width_s, name, bucket_start, target, labels"


def _fold(source: str) -> str:
    """The statement that folds the samples of ``source`` into ``metric_rollups``."""
    return f"""
INSERT INTO metric_rollups AS r ({KEY}, num_samples, value_sum, value_max)
SELECT project, w.width_s, name,
  date_bin(make_interval(secs => w.width_s), time, TIMESTAMPTZ '2000-01-01 00:00:00+00'), target, labels,
  count(*), sum(value), max(value)
FROM {source} CROSS JOIN (VALUES (60), (3600)) AS w (width_s)
GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
ON CONFLICT ({KEY}) DO UPDATE SET num_samples = r.num_samples + excluded.num_samples,
  value_sum = r.value_sum + excluded.value_sum, value_max = greatest(r.value_max, excluded.value_max);
"""


def upgrade() -> None:
    double: postgresql.DOUBLE_PRECISION[float] = postgresql.DOUBLE_PRECISION()
    op.create_table(
        "metric_rollups",
        sa.Column("project", sa.Text(), nullable=False),
        sa.Column("width_s", sa.Integer(), nullable=False, comment="60 or 3600"),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("bucket_start", postgresql.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("labels", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("num_samples", sa.BigInteger(), nullable=False),
        sa.Column("value_sum", double, nullable=False),
        sa.Column("value_max", double, nullable=False, comment="a counter's last value, unless reset"),
        sa.PrimaryKeyConstraint(
            "project", "width_s", "name", "bucket_start", "target", "labels", name=op.f("pk_metric_rollups")
        ),
    )
    op.create_index("ix_metric_samples_project_time", "metric_samples", ["project", "time"])
    op.execute(
        "CREATE FUNCTION evallens_fold_metric_samples() RETURNS trigger LANGUAGE plpgsql AS $fold$\n"
        f"BEGIN\n{_fold('new_samples')}\nRETURN NULL;\nEND\n$fold$"
    )
    op.execute(
        "CREATE TRIGGER metric_samples_fold AFTER INSERT ON metric_samples REFERENCING NEW TABLE AS"
        " new_samples FOR EACH STATEMENT EXECUTE FUNCTION evallens_fold_metric_samples()"
    )
    op.execute(_fold("metric_samples"))


def downgrade() -> None:
    op.execute("DROP TRIGGER metric_samples_fold ON metric_samples")
    op.execute("DROP FUNCTION evallens_fold_metric_samples()")
    op.drop_index("ix_metric_samples_project_time", table_name="metric_samples")
    op.drop_table("metric_rollups")
