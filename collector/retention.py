"""Retention: drop whole daily partitions of spans older than a cutoff."""

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Engine

from evallens.db.partitions import drop_span_partitions_before
from evallens.errors import EvallensError

_AGE = re.compile(r"^\s*(\d+)\s*([dw])\s*$")
MAX_AGE_DAYS = 100 * 366  # beyond any partition; and timedelta overflows past 999,999,999 days


class InvalidAge(EvallensError):
    """An ``--older-than`` that is not a number of days or weeks."""


@dataclass(frozen=True)
class PruneReport:
    """What ``evallens collector prune`` did."""

    cutoff: date
    dropped: list[str]


def parse_age(text: str) -> timedelta:
    """``30d`` or ``4w`` as a timedelta (partitions are daily, so nothing finer)."""
    match = _AGE.match(text.lower())
    if match is None:
        raise InvalidAge(f"--older-than must look like 30d or 4w, not {text!r}")
    days = int(match.group(1)) * (7 if match.group(2) == "w" else 1)
    if days > MAX_AGE_DAYS:
        raise InvalidAge(f"--older-than {text!r}: at most {MAX_AGE_DAYS} days")
    return timedelta(days=days)


def prune_spans(engine: Engine, older_than: timedelta, today: date | None = None) -> PruneReport:
    """Drop every span partition whose whole day is older than ``older_than`` before today (UTC)."""
    cutoff = (today or datetime.now(UTC).date()) - older_than
    with engine.begin() as connection:
        dropped = drop_span_partitions_before(connection, cutoff)
    return PruneReport(cutoff=cutoff, dropped=dropped)
