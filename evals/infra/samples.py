"""Engine and service figures of a time window from scraped Prometheus samples.

A series is one (target, labels) of a metric: the service and vLLM, or two replicas, can expose the
same counter with the same labels, and each counts on its own. Gauges are averaged and maximised
over every series' samples inside the window; a counter's figure is its increase over the window,
summed over its series, as Prometheus's ``increase()`` computes it (without extrapolation); a
counter's series are those of its name with and without ``_total``, each one a series of its own.
"""

from collections import defaultdict
from datetime import datetime, timedelta
from itertools import pairwise

from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens.db.models import MetricSample

# Scrapes are periodic: a sample taken shortly after the run still describes it.
SCRAPE_GRACE = timedelta(seconds=15)
# How far before the window a counter's last sample is looked for (Prometheus's default lookback):
# the cost of a run's figures follows its window, not the history kept. A series silent longer (its
# target or the scraper was down) starts from its first sample inside the window.
LOOKBACK = timedelta(minutes=5)


def gauge_stats(
    session: Session, project: str, name: str, start: datetime, end: datetime
) -> tuple[float | None, float | None]:
    """Mean and max of a gauge's samples of ``project`` inside the window (None, None without samples).

    The samples of every series count together: every target is scraped as often, so the mean is the
    fleet's mean level (e.g. KV-cache usage) and the max the highest any one engine reached.
    """
    query = select(MetricSample.value).where(
        MetricSample.project == project,
        MetricSample.name == name,
        MetricSample.time >= start,
        MetricSample.time <= end + SCRAPE_GRACE,
    )
    values = list(session.scalars(query))
    if not values:
        return None, None
    return sum(values) / len(values), max(values)


def counter_delta(session: Session, project: str, name: str, start: datetime, end: datetime) -> float | None:
    """How much a counter of ``project`` grew over the window, summed over its series (None without
    samples inside the window). A counter spelled with and without ``_total`` (one exporter's and
    another's, or one before an upgrade and after) is the series of both spellings."""
    spellings = dict.fromkeys((name, f"{name}_total", name.removesuffix("_total")))
    return _delta(session, project, list(spellings), start, end)


def _increase(values: list[float]) -> float:
    """The growth of one series' consecutive values: the sum of the rises between neighbours, a drop
    being a restart whose new value counted from zero."""
    return sum(later - earlier if later >= earlier else later for earlier, later in pairwise(values))


def _delta(session: Session, project: str, names: list[str], start: datetime, end: datetime) -> float | None:
    """The summed increase of the series of ``names`` from their last sample at or before ``start`` (up
    to ``LOOKBACK`` before it) through their samples up to a grace after ``end``."""
    query = (
        select(
            MetricSample.name, MetricSample.target, MetricSample.labels, MetricSample.time, MetricSample.value
        )
        .where(
            MetricSample.project == project,
            MetricSample.name.in_(names),
            MetricSample.time >= start - LOOKBACK,
            MetricSample.time <= end + SCRAPE_GRACE,
        )
        .order_by(MetricSample.time)
    )
    baselines: dict[tuple[str, str, str], float] = {}
    inside: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for name, target, labels, time, value in session.execute(query):
        series = (name, target, repr(sorted((labels or {}).items())))
        if time <= start:
            baselines[series] = value
        else:
            inside[series].append(value)
    if not inside:
        return None
    return sum(
        _increase([baselines[series], *values] if series in baselines else values)
        for series, values in inside.items()
    )


def histogram_mean(session: Session, project: str, name: str, start: datetime, end: datetime) -> float | None:
    """Mean observation of a histogram of ``project`` over the window: increase(_sum) / increase(_count),
    each summed over the histogram's series."""
    total = counter_delta(session, project, f"{name}_sum", start, end)
    count = counter_delta(session, project, f"{name}_count", start, end)
    if total is None or not count:
        return None
    return total / count
