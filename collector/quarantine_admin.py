"""``evallens collector quarantine``: list the spans PostgreSQL refused, write them again, or drop them."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, Engine, Row, delete, func, select, update
from sqlalchemy.orm import Session

from collector.copy_rows import copy_rows
from collector.quarantine import SUFFIX, isolate
from collector.records import record_from_dict
from collector.write import DatabaseDown, SpanWriter
from evallens.db.models import QuarantinedSpan
from evallens.errors import DatabaseUnavailable, EvallensError
from evallens.settings.collector import DEFAULT_QUARANTINE_RETRY_BATCH


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
    batch_size: int = DEFAULT_QUARANTINE_RETRY_BATCH,
) -> RetryReport:
    """Write quarantined spans into ``spans`` again (after the cause was fixed); those PostgreSQL now
    takes leave the quarantine, the others stay with their new reason. Resent spans are stored once.

    ``batch_size`` spans at a time, by id, those quarantined when it started (a quarantine of millions
    is never held in memory whole). Stored spans leave the quarantine in the transaction that stores
    them (a failure or crash between two transactions left them both stored and quarantined); those
    still refused get their new reasons in one transaction per batch. In rounds, as ingestion does: each
    makes at most ``max_new_days`` of the partitions the spans need (each locks ``spans`` until its
    transaction ends; a retry of spans over a year made some 366 in one, while every collector's flush
    waited) and writes the spans those days hold.
    """
    conditions = _selected(ids, every, project)
    with Session(engine) as session:
        last_id = session.scalar(select(func.max(QuarantinedSpan.id)).where(*conditions))
    num_stored = num_still_refused = 0
    after: int | None = None  # the last id of the batch before
    writer = SpanWriter(database_url, max_new_days=max_new_days)
    try:
        while last_id is not None and (after is None or after < last_id):
            query = (
                select(QuarantinedSpan.id, QuarantinedSpan.span)
                .where(*conditions, QuarantinedSpan.id <= last_id)
                .order_by(QuarantinedSpan.id)
                .limit(batch_size)
            )
            if after is not None:
                query = query.where(QuarantinedSpan.id > after)
            with Session(engine) as session:
                batch = session.execute(query).all()
            if not batch:  # the rest was dropped meanwhile
                break
            reasons = _retry_batch(writer, batch)
            if reasons:
                with Session(engine) as session, session.begin():
                    new_reasons = [{"id": batch[at][0], "reason": reason} for at, reason in reasons.items()]
                    session.execute(update(QuarantinedSpan), new_reasons)
            num_stored += len(batch) - len(reasons)
            num_still_refused += len(reasons)
            after = batch[-1][0]
    except DatabaseDown as error:
        raise DatabaseUnavailable(f"PostgreSQL became unreachable: {error}") from None
    finally:
        writer.close()
    return RetryReport(num_stored, num_still_refused)


def _retry_batch(writer: SpanWriter, batch: Sequence[Row[int, dict[str, Any]]]) -> dict[int, str]:
    """Write the spans of ``batch`` (quarantine ids and spans) in rounds of a flush's new partitions,
    each leaving the quarantine as it is stored; the reasons of those still refused, by place."""
    spans = [record_from_dict(span) for _, span in batch]
    quarantine_ids: dict[bytes, list[int]] = {}
    for line, (row_id, _) in zip(copy_rows(spans).lines(), batch, strict=True):
        quarantine_ids.setdefault(line, []).append(row_id)  # a span quarantined twice: one line
    reasons: dict[int, str] = {}
    waiting = list(range(len(spans)))
    while waiting:
        rows = copy_rows([spans[at] for at in waiting])
        refusals = isolate(writer, rows, expect_duplicates=True, quarantine_ids=quarantine_ids)
        for at in waiting:
            reasons.pop(at, None)
        reasons.update({waiting[refusal.index]: refusal.reason for refusal in refusals})
        missing = [waiting[refusal.index] for refusal in refusals if refusal.partition_missing]
        if len(missing) == len(waiting):  # no day got its partition: kept with that reason
            break
        waiting = missing
    return reasons
