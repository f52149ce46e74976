"""``evallens collector quarantine``: list the spans PostgreSQL refused, write them again, or drop them."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import ColumnElement, Engine, delete, func, select
from sqlalchemy.orm import Session

from collector.copy_rows import copy_rows
from collector.quarantine import SUFFIX, isolate
from collector.records import record_from_dict
from collector.write import DatabaseDown, SpanWriter
from evallens.db.models import QuarantinedSpan
from evallens.errors import DatabaseUnavailable, EvallensError


class NothingSelected(EvallensError):
    """Neither ids nor ``--all`` were given."""


@dataclass(frozen=True)
class QuarantineEntry:
    """One quarantined span as the list shows it."""

    id: int
    project: str
    trace_id: str
    span_id: str
    name: str
    reason: str
    quarantined_at: datetime


@dataclass(frozen=True)
class QuarantineListing:
    """What is in the quarantine: the newest entries, the total, and dead-letter files not yet moved in."""

    entries: list[QuarantineEntry]
    num_total: int
    num_dead_letter_files: int


@dataclass(frozen=True)
class RetryReport:
    """How many quarantined spans were stored now, and how many PostgreSQL still refuses."""

    num_stored: int
    num_still_refused: int


def _selected(ids: Sequence[int], every: bool, project: str | None) -> list[ColumnElement[bool]]:
    if not ids and not every:
        raise NothingSelected("give quarantine ids (see `evallens collector quarantine list`) or --all")
    conditions: list[ColumnElement[bool]] = []
    if ids:
        conditions.append(QuarantinedSpan.id.in_(list(ids)))
    if project is not None:
        conditions.append(QuarantinedSpan.project == project)
    return conditions


def list_quarantine(
    session: Session, project: str | None, limit: int, dead_letters: Path | None = None
) -> QuarantineListing:
    """The newest ``limit`` quarantined spans (of ``project`` when given)."""
    query = select(QuarantinedSpan).order_by(QuarantinedSpan.id.desc()).limit(limit)
    count = select(func.count()).select_from(QuarantinedSpan)
    if project is not None:
        query = query.where(QuarantinedSpan.project == project)
        count = count.where(QuarantinedSpan.project == project)
    entries = [
        QuarantineEntry(
            row.id,
            row.project,
            row.trace_id,
            row.span_id,
            str(row.span.get("name", "")),
            row.reason,
            row.quarantined_at,
        )
        for row in session.scalars(query)
    ]
    files = (
        len(list(dead_letters.glob(f"*{SUFFIX}")))
        if dead_letters is not None and dead_letters.is_dir()
        else 0
    )
    return QuarantineListing(entries, int(session.scalar(count) or 0), files)


def drop_quarantine(session: Session, ids: Sequence[int], every: bool, project: str | None) -> int:
    """Delete quarantined spans for good; return how many. The caller commits."""
    result = session.execute(delete(QuarantinedSpan).where(*_selected(ids, every, project)))
    return int(getattr(result, "rowcount", 0) or 0)


def retry_quarantine(
    engine: Engine,
    database_url: str,
    ids: Sequence[int],
    every: bool,
    project: str | None,
    max_new_days: int,
) -> RetryReport:
    """Write quarantined spans into ``spans`` again (after the cause was fixed); those PostgreSQL now
    takes leave the quarantine, the others stay with their new reason. Resent spans are stored once.

    In rounds, as ingestion does: each makes at most ``max_new_days`` of the partitions the spans need
    (each locks ``spans`` until its transaction ends; a retry of spans over a year made some 366 in
    one, while every collector's flush waited) and writes the spans those days hold.
    """
    with Session(engine) as session:
        rows = list(session.scalars(select(QuarantinedSpan).where(*_selected(ids, every, project))))
    spans = [record_from_dict(row.span) for row in rows]
    reasons: dict[int, str] = {}  # by place in ``rows``
    waiting = list(range(len(rows)))
    writer = SpanWriter(database_url, max_new_days=max_new_days)
    try:
        while waiting:
            refusals = isolate(writer, copy_rows([spans[at] for at in waiting]), expect_duplicates=True)
            for at in waiting:
                reasons.pop(at, None)
            reasons.update({waiting[refusal.index]: refusal.reason for refusal in refusals})
            missing = [waiting[refusal.index] for refusal in refusals if refusal.partition_missing]
            if len(missing) == len(waiting):  # no day got its partition: kept with that reason
                break
            waiting = missing
    except DatabaseDown as error:
        raise DatabaseUnavailable(f"PostgreSQL became unreachable: {error}") from None
    finally:
        writer.close()
    stored = [row.id for at, row in enumerate(rows) if at not in reasons]
    with Session(engine) as session, session.begin():
        if stored:
            session.execute(delete(QuarantinedSpan).where(QuarantinedSpan.id.in_(stored)))
        for at, reason in reasons.items():
            session.get_one(QuarantinedSpan, rows[at].id).reason = reason
    return RetryReport(len(stored), len(reasons))
