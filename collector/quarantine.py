"""Spans PostgreSQL refuses: find them in a batch, keep them with the reason, never drop them.

A refused batch is bisected (``isolate``): every good span is stored and each bad one becomes a
``Refusal``. Refusals go to the ``collector_quarantine`` table, or to an fsync'd dead-letter file
when PostgreSQL went away meanwhile; dead letters are moved into the table once it is back.
"""

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import orjson

from collector._files import remove_durably, write_atomically
from collector.copy_rows import CopyRows, decode_line
from collector.records import record_from_dict, record_to_dict
from collector.stats import CollectorStats
from collector.write import DatabaseDown, PartitionBudget, Refusal, RowsRefused, SpanWriter

logger = logging.getLogger(__name__)

SUFFIX = ".jsonl"
REFUSED_SUFFIX = ".refused"


class QuarantineFailed(Exception):
    """Refused spans could be kept neither in PostgreSQL nor on disk; they were not acknowledged."""


def isolate(
    writer: SpanWriter,
    rows: CopyRows,
    expect_duplicates: bool = False,
    *,
    replace_gone: bool = True,
    budget: PartitionBudget | None = None,
    quarantine_ids: Mapping[bytes, Sequence[int]] | None = None,
) -> list[Refusal]:
    """Store ``rows``; when PostgreSQL refuses rows, bisect until every good span is stored.

    Returns the spans refused on their own, with their rows' places in ``rows``, those left out
    because their day has no partition and the writer made its share of them in this call
    (``partition_missing``), and those of days pruned (before the prune cutoff). ``DatabaseDown``
    propagates: what was committed before stays committed, and a replay of the whole batch skips it.
    ``replace_gone``: rows refused because a partition the writer knew was dropped meanwhile are placed
    again (once), so that those of a pruned day get their reason. ``budget``: the new partitions this
    flush may still make (the writer's ``flush_budget`` when None); each half of a bisection is placed
    from it, so the flush makes no more than one placement would. ``quarantine_ids``: the quarantine
    entries each row's line was retried from; each write deletes those of its rows (``SpanWriter.write``).
    """
    budget = writer.flush_budget() if budget is None else budget
    try:
        unplaced = writer.place(rows, budget)
    except RowsRefused:
        unplaced = set()  # ``write`` meets the same refusal, and the bisection below keeps the rows
    if not unplaced:
        return _isolate_placed(writer, rows, expect_duplicates, replace_gone, budget, quarantine_ids)
    placed, placed_at, left_out = rows.without_days(unplaced)
    refusals = [writer.left_out(line, index) for index, line in left_out]
    if placed.num_rows:
        refusals += [
            replace(refusal, index=placed_at[refusal.index])
            for refusal in _isolate_placed(
                writer, placed, expect_duplicates, replace_gone, budget, quarantine_ids
            )
        ]
    return refusals


def _isolate_placed(
    writer: SpanWriter,
    rows: CopyRows,
    expect_duplicates: bool,
    replace_gone: bool,
    budget: PartitionBudget,
    quarantine_ids: Mapping[bytes, Sequence[int]] | None,
) -> list[Refusal]:
    """``isolate`` of rows whose days all have a partition."""
    try:
        writer.write(rows, expect_duplicates, budget, quarantine_ids)
        return []
    except RowsRefused as error:
        if error.partition_gone and replace_gone:
            return isolate(
                writer,
                rows,
                expect_duplicates,
                replace_gone=False,
                budget=budget,
                quarantine_ids=quarantine_ids,
            )
        if rows.num_rows == 1:
            return [Refusal(decode_line(rows.lines()[0]), str(error))]
    lines = rows.lines()
    middle = len(lines) // 2
    refusals: list[Refusal] = []
    for first, half in ((0, lines[:middle]), (middle, lines[middle:])):
        # placed like the flush: a partition dropped meanwhile is not made beyond the flush's budget
        half_refusals = isolate(
            writer,
            CopyRows.of_lines(half, rows.days),
            expect_duplicates,
            replace_gone=replace_gone,
            budget=budget,
            quarantine_ids=quarantine_ids,
        )
        refusals += [replace(refusal, index=first + refusal.index) for refusal in half_refusals]
    return refusals


class DeadLetters:
    """A directory of fsync'd JSON-lines files of refusals, waiting for PostgreSQL."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        for leftover in directory.glob("*.tmp"):  # a crash mid-write: never acknowledged
            leftover.unlink()

    def append(self, refusals: Sequence[Refusal]) -> Path:
        """Durably write ``refusals`` (raises ``OSError`` when the disk cannot take them)."""
        lines = (
            orjson.dumps({"reason": refusal.reason, "span": record_to_dict(refusal.span)})
            for refusal in refusals
        )
        return write_atomically(self.directory, b"\n".join(lines) + b"\n", SUFFIX)

    def pending(self) -> list[Path]:
        """Files waiting to move into the table, oldest first."""
        return sorted(self.directory.glob(f"*{SUFFIX}"))

    @property
    def num_files(self) -> int:
        """Files on disk, waiting or set aside."""
        return len(self.pending()) + len(list(self.directory.glob(f"*{REFUSED_SUFFIX}")))

    @staticmethod
    def read(path: Path) -> list[Refusal]:
        """The refusals of one file."""
        refusals = []
        for line in path.read_bytes().splitlines():
            if line.strip():
                item = orjson.loads(line)
                refusals.append(Refusal(record_from_dict(item["span"]), str(item["reason"])))
        return refusals


class Quarantine:
    """Keeps refusals: in the table when it can, else on disk. Used by the writer thread only."""

    def __init__(self, writer: SpanWriter, dead_letters: DeadLetters, stats: CollectorStats) -> None:
        self._writer, self._dead_letters, self._stats = writer, dead_letters, stats
        self.num_files = 0
        self.num_quarantined = 0
        self._num_waiting = 0
        self._count_files()

    def put(self, refusals: Sequence[Refusal]) -> None:
        """Keep ``refusals`` durably; ``QuarantineFailed`` when neither place can take them."""
        for refusal in refusals[:5]:
            logger.warning(
                "quarantined span %s of trace %s (project %s): %s",
                refusal.span.span_id,
                refusal.span.trace_id,
                refusal.span.project,
                refusal.reason,
            )
        try:
            self._writer.quarantine(refusals)
        except (DatabaseDown, RowsRefused) as error:
            self._to_file(refusals, error)
        self.num_quarantined += len(refusals)
        self._stats.spans_quarantined.inc(len(refusals))

    def import_one(self) -> bool:
        """Move the oldest dead-letter file into the table; False when there was none.

        Raises ``DatabaseDown``; a file PostgreSQL refuses even there is set aside as ``.refused``.
        """
        pending = self._dead_letters.pending()
        if not pending:
            return False
        path = pending[0]
        try:
            self._writer.quarantine(DeadLetters.read(path))
        except RowsRefused as error:
            logger.error("PostgreSQL refused dead letters %s even in the quarantine: %s", path, error)
            path.rename(path.with_suffix(REFUSED_SUFFIX))
            self._count_files()
            return True
        remove_durably(path)
        self._count_files()
        return True

    @property
    def waiting(self) -> bool:
        """Whether dead-letter files wait for the table."""
        return self._num_waiting > 0

    def _to_file(self, refusals: Sequence[Refusal], cause: Exception) -> None:
        try:
            path = self._dead_letters.append(refusals)
        except OSError as error:
            raise QuarantineFailed(f"cannot quarantine {len(refusals)} spans ({cause}; {error})") from error
        logger.warning("quarantine table unavailable (%s); %d spans kept in %s", cause, len(refusals), path)
        self._count_files()

    def _count_files(self) -> None:
        self._num_waiting = len(self._dead_letters.pending())
        self.num_files = self._dead_letters.num_files
        self._stats.dead_letter_files.set(self.num_files)
