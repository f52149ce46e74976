"""Engine and service figures of a time window from scraped Prometheus samples.

A series is one (target, labels) of a metric: the service and vLLM, or two replicas, can expose the
same counter with the same labels, and each counts on its own. Gauges are averaged and maximised
over every series' samples inside the window; counters are deltas between the last sample at or
before the window start and the last sample up to a short grace after its end, per series.
"""

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens.db.models import MetricSample

# Scrapes are periodic: a sample taken shortly after the run still describes it.
SCRAPE_GRACE = timedelta(seconds=15)


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
    samples)."""
    for candidate in dict.fromkeys((name, f"{name}_total", name.removesuffix("_total"))):
        delta = _delta(session, project, candidate, start, end)
        if delta is not None:
            return delta
    return None


def _delta(session: Session, project: str, name: str, start: datetime, end: datetime) -> float | None:
    query = (
        select(MetricSample.target, MetricSample.labels, MetricSample.time, MetricSample.value)
        .where(
            MetricSample.project == project,
            MetricSample.name == name,
            MetricSample.time <= end + SCRAPE_GRACE,
        )
        .order_by(MetricSample.time)
    )
    series: dict[tuple[str, str], list[tuple[datetime, float]]] = defaultdict(list)
    for target, labels, time, value in session.execute(query):
        series[(target, repr(sorted((labels or {}).items())))].append((time, value))
    total, found = 0.0, False
    for points in series.values():
        before = [value for time, value in points if time <= start]
        inside = [value for time, value in points if time > start]
        if not inside:
            continue
        first = before[-1] if before else inside[0]
        last = inside[-1]
        total += last - first if last >= first else last  # a restart reset the counter
        found = True
    return total if found else None


def histogram_mean(session: Session, project: str, name: str, start: datetime, end: datetime) -> float | None:
    """Mean observation of a histogram of ``project`` over the window: delta(_sum) / delta(_count),
    each summed over the histogram's series."""
    total = counter_delta(session, project, f"{name}_sum", start, end)
    count = counter_delta(session, project, f"{name}_count", start, end)
    if total is None or not count:
        return None
    return total / count
