"""Metric rollups see a counter reset inside a bucket: each bucket keeps its first and last sample and
the counter's growth between its samples, a reset counting from zero (Prometheus's ``increase``).

Before, a bucket kept only the counter's highest value, so a service restarted inside an hour whose
counter climbed back past its earlier value showed no reset, and the growth before the restart was
left out of the Serving charts. The trigger now steps through each statement's samples in time order
per series and bucket, and joins a bucket's stored summary to a statement's by the step from the one's
last sample to the other's first. That is exact when a series' samples are stored in time order, as
the scraper stores them (one scrape a statement); a sample stored late, inside the span a bucket's
samples already cover, adds nothing to the growth (counts, sums, maxima, first and last stay exact).
The rollups are folded again from the samples, so they hold the growth of samples stored before.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06 19:15:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY = "project, width_s, name, bucket_start, target, labels"
BUCKET = "date_bin(make_interval(secs => w.width_s), time, TIMESTAMPTZ '2000-01-01 00:00:00+00')"
NEW_COLUMNS = ("first_time", "first_value", "last_time", "last_value", "value_increase")


def _step(before: str, after: str) -> str:
    """A counter's growth from ``before`` to ``after``: a fall is a reset, counted from zero."""
    return f"CASE WHEN {after} < {before} THEN {after} ELSE {after} - {before} END"


def _fold(source: str) -> str:
    """The statement that folds the samples of ``source`` into ``metric_rollups``."""
    return f"""
INSERT INTO metric_rollups AS r ({KEY}, num_samples, value_sum, value_max,
  first_time, first_value, last_time, last_value, value_increase)
SELECT {KEY}, count(*), sum(value), max(value),
  min(time), (array_agg(value ORDER BY time, id))[1],
  max(time), (array_agg(value ORDER BY time DESC, id DESC))[1],
  coalesce(sum({_step("previous", "value")}), 0)
FROM (
  SELECT {KEY}, time, id, value,
    lag(value) OVER (PARTITION BY {KEY} ORDER BY time, id) AS previous
  FROM (SELECT project, w.width_s, name, {BUCKET} AS bucket_start, target, labels, time, id, value
        FROM {source} CROSS JOIN (VALUES (60), (3600)) AS w (width_s)) AS binned
) AS stepped
GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
ON CONFLICT ({KEY}) DO UPDATE SET num_samples = r.num_samples + excluded.num_samples,
  value_sum = r.value_sum + excluded.value_sum, value_max = greatest(r.value_max, excluded.value_max),
  value_increase = r.value_increase + excluded.value_increase + CASE
    WHEN r.last_time <= excluded.first_time THEN {_step("r.last_value", "excluded.first_value")}
    WHEN excluded.last_time <= r.first_time THEN {_step("excluded.last_value", "r.first_value")}
    ELSE 0 END,
  first_time = least(r.first_time, excluded.first_time),
  first_value = CASE WHEN excluded.first_time < r.first_time THEN excluded.first_value ELSE r.first_value END,
  last_time = greatest(r.last_time, excluded.last_time),
  last_value = CASE WHEN excluded.last_time >= r.last_time THEN excluded.last_value ELSE r.last_value END;
"""


def _fold_0007(source: str) -> str:
    """Migration 0007's fold (count, sum and maximum only), for the downgrade."""
    return f"""
INSERT INTO metric_rollups AS r ({KEY}, num_samples, value_sum, value_max)
SELECT project, w.width_s, name, {BUCKET}, target, labels, count(*), sum(value), max(value)
FROM {source} CROSS JOIN (VALUES (60), (3600)) AS w (width_s)
GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
ON CONFLICT ({KEY}) DO UPDATE SET num_samples = r.num_samples + excluded.num_samples,
  value_sum = r.value_sum + excluded.value_sum, value_max = greatest(r.value_max, excluded.value_max);
"""


def _replace_trigger_function(fold: str) -> None:
    op.execute(
        "CREATE OR REPLACE FUNCTION evallens_fold_metric_samples() RETURNS trigger"
        " LANGUAGE plpgsql AS $fold$\n"
        f"BEGIN\n{fold}\nRETURN NULL;\nEND\n$fold$"
    )


def upgrade() -> None:
    double: postgresql.DOUBLE_PRECISION[float] = postgresql.DOUBLE_PRECISION()
    moment = postgresql.TIMESTAMP(timezone=True)
    comments = {
        "first_time": "the bucket's earliest sample",
        "first_value": "the value of the bucket's earliest sample",
        "last_time": "the bucket's latest sample",
        "last_value": "the value of the bucket's latest sample",
        "value_increase": "a counter's growth between the bucket's samples, a reset counting from zero",
    }
    for column in NEW_COLUMNS:
        kind = moment if column.endswith("_time") else double
        op.add_column("metric_rollups", sa.Column(column, kind, nullable=True, comment=comments[column]))
    op.alter_column("metric_rollups", "value_max", comment="the highest value in the bucket")
    _replace_trigger_function(_fold("new_samples"))
    op.execute("DELETE FROM metric_rollups")
    op.execute(_fold("metric_samples"))
    for column in NEW_COLUMNS:
        op.alter_column("metric_rollups", column, nullable=False)


def downgrade() -> None:
    _replace_trigger_function(_fold_0007("new_samples"))
    for column in NEW_COLUMNS:
        op.drop_column("metric_rollups", column)
    op.alter_column("metric_rollups", "value_max", comment="a counter's last value, unless reset")
