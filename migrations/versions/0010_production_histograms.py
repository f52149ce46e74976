"""Production traces counted per hour and log-spaced bucket of latency and cost (``production_histograms``).

Bad-case mining flags latency and cost outliers against exact percentiles of the window's production
traces; sorting every trace of a 30-day window was most of a cold Cases view at 10M spans. Statement
triggers on ``trace_summaries`` (``AFTER INSERT`` and ``AFTER UPDATE``, transition tables) add each
written summary's bucket and subtract its old one, so the counts follow the summaries however their
spans arrive (several requests, any order, a question event after the spans). Buckets are
``evallens_log_bucket(value)``: ``floor(20 ln value)`` (about 5% wide), one below everything for values
up to 1e-12, one above for 1e300 and beyond. The two partial expression indexes hold each production
summary's bucket, start and value, so a percentile reads the counts, then only its bucket's traces.
Backfilled here from the stored summaries.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 14:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PRODUCTION = "asked AND eval_run_id IS NULL AND rated_trace_id IS NULL AND latency_ms IS NOT NULL"
MEASURES = ("latency_ms", "cost_usd")
BUCKET_FUNCTION = """
CREATE FUNCTION evallens_log_bucket(value double precision) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN NOT value > 1e-12 THEN -554 WHEN value >= 1e300 THEN 13816
            ELSE floor(ln(value) * 20)::integer END
"""


def _counted(source: str, sign: int) -> str:
    """One row per production summary of ``source`` and measure it has, counting ``sign``."""
    return " UNION ALL ".join(
        f"SELECT project, '{measure}' AS measure, date_trunc('hour', start_time, 'UTC') AS hour,"
        f" evallens_log_bucket({measure}) AS bucket, {sign} AS num FROM {source}"
        f" WHERE {PRODUCTION} AND {measure} IS NOT NULL"
        for measure in MEASURES
    )


def _count(*sources: tuple[str, int]) -> str:
    """Add the summaries of ``sources`` (each with its sign) to the histograms."""
    counted = " UNION ALL ".join(_counted(source, sign) for source, sign in sources)
    return f"""
INSERT INTO production_histograms AS h (project, measure, hour, bucket, num_traces)
SELECT project, measure, hour, bucket, sum(num) FROM ({counted}) c
GROUP BY 1, 2, 3, 4 HAVING sum(num) <> 0 ORDER BY 1, 2, 3, 4
ON CONFLICT (project, measure, hour, bucket) DO UPDATE SET num_traces = h.num_traces + excluded.num_traces;
"""


def _trigger(name: str, event: str, transition: str, body: str) -> None:
    op.execute(
        f"CREATE FUNCTION evallens_{name}() RETURNS trigger LANGUAGE plpgsql AS $count$\n"
        f"BEGIN\n{body}\nRETURN NULL;\nEND\n$count$"
    )
    op.execute(
        f"CREATE TRIGGER trace_summaries_{name} AFTER {event} ON trace_summaries REFERENCING {transition}"
        f" FOR EACH STATEMENT EXECUTE FUNCTION evallens_{name}()"
    )


def upgrade() -> None:
    op.create_table(
        "production_histograms",
        sa.Column("project", sa.Text(), nullable=False),
        sa.Column("measure", sa.Text(), nullable=False, comment="latency_ms or cost_usd"),
        sa.Column(
            "hour",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="the UTC hour the traces start in",
        ),
        sa.Column("bucket", sa.Integer(), nullable=False, comment="evallens_log_bucket(value)"),
        sa.Column("num_traces", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "project", "measure", "hour", "bucket", name=op.f("pk_production_histograms")
        ),
    )
    op.execute(BUCKET_FUNCTION)
    _trigger("count_inserted", "INSERT", "NEW TABLE AS new_rows", _count(("new_rows", 1)))
    _trigger(
        "count_updated",
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        _count(("new_rows", 1), ("old_rows", -1)),
    )
    op.execute(_count(("trace_summaries", 1)))
    op.execute("ANALYZE production_histograms")  # the planner's first estimate is otherwise a few rows
    for measure in MEASURES:
        op.create_index(
            f"ix_trace_summaries_production_{measure}",
            "trace_summaries",
            ["project", sa.text(f"evallens_log_bucket({measure})"), "start_time"],
            postgresql_include=[measure],
            postgresql_where=sa.text(f"{PRODUCTION} AND {measure} IS NOT NULL"),
        )


def downgrade() -> None:
    for measure in MEASURES:
        op.drop_index(f"ix_trace_summaries_production_{measure}", table_name="trace_summaries")
    for name in ("count_inserted", "count_updated"):
        op.execute(f"DROP TRIGGER trace_summaries_{name} ON trace_summaries")
        op.execute(f"DROP FUNCTION evallens_{name}()")
    op.execute("DROP FUNCTION evallens_log_bucket(double precision)")
    op.drop_table("production_histograms")
