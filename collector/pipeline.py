"""The bounded queue between receivers and the bulk writer, and the thread that drains it.

Receivers hand in decoded spans and get a future that resolves only once the spans are durable
(committed, or fsync'd to the spool). When PostgreSQL is down, flushes go to the spool; when that
is off or full, the futures fail with ``Unavailable`` and the receivers answer 503.
"""

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field

from collector.records import SpanRecord
from collector.spool import Spool
from collector.stats import CollectorStats
from collector.write import DatabaseDown, RowsRefused, SpanWriter

logger = logging.getLogger(__name__)

STORED = "stored"
SPOOLED = "spooled"


class Refused(Exception):
    """The collector cannot take these spans now; the client should retry after ``retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Overloaded(Refused):
    """The queue is full (spans or bytes)."""


class Unavailable(Refused):
    """PostgreSQL is unreachable and the spool cannot take the spans."""


class WriteFailed(Exception):
    """PostgreSQL refused the rows themselves; nothing of the request was stored."""


@dataclass(frozen=True)
class QueueLimits:
    """Bounds of the queue and of one flush."""

    max_spans: int = 50_000
    max_bytes: int = 128 * 1024 * 1024
    flush_max_spans: int = 10_000
    retry_after_s: int = 2
    db_retry_s: float = 1.0


@dataclass
class _Pending:
    spans: list[SpanRecord]
    num_bytes: int
    future: Future[str] = field(default_factory=Future)


class Ingestor:
    """Queue plus writer thread; ``submit`` is safe to call from any thread."""

    def __init__(
        self, writer: SpanWriter, spool: Spool | None, limits: QueueLimits, stats: CollectorStats
    ) -> None:
        self._writer, self._spool, self._limits, self._stats = writer, spool, limits, stats
        self._queue: deque[_Pending] = deque()
        self._num_spans = self._num_bytes = 0
        self._condition = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.database_up = True
        self._next_db_attempt = 0.0

    def check_admission(self) -> None:
        """Raise ``Refused`` when a new request would certainly be refused (before reading its body)."""
        if self._num_spans >= self._limits.max_spans or self._num_bytes >= self._limits.max_bytes:
            raise Overloaded("the collector's queue is full", self._limits.retry_after_s)
        if self._spool is None and not self._database_worth_trying():
            # once the retry interval is over a request gets through, and its flush probes PostgreSQL
            raise Unavailable("PostgreSQL is unreachable", self._limits.retry_after_s)

    def submit(self, spans: list[SpanRecord], num_bytes: int) -> Future[str]:
        """Queue ``spans``; the future resolves to ``"stored"`` or ``"spooled"`` once durable."""
        pending = _Pending(spans, num_bytes)
        if not spans:
            pending.future.set_result(STORED)
            return pending.future
        with self._condition:
            self.check_admission()
            if self._queue and (
                self._num_spans + len(spans) > self._limits.max_spans
                or self._num_bytes + num_bytes > self._limits.max_bytes
            ):
                raise Overloaded("the collector's queue is full", self._limits.retry_after_s)
            self._queue.append(pending)
            self._resize(len(spans), num_bytes)
            self._condition.notify()
        return pending.future

    def start(self) -> None:
        """Start the writer thread; it also replays what this or an earlier run spooled."""
        self._thread = threading.Thread(target=self._run, name="collector-writer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Write what is queued, then stop the writer thread."""
        with self._condition:
            self._stopping = True
            self._condition.notify()
        if self._thread is not None:
            self._thread.join()
        self._writer.close()

    @property
    def num_queued_spans(self) -> int:
        """Spans accepted but not yet durable."""
        return self._num_spans

    def _resize(self, num_spans: int, num_bytes: int) -> None:
        self._num_spans += num_spans
        self._num_bytes += num_bytes
        self._stats.queue_spans.set(self._num_spans)
        self._stats.queue_bytes.set(self._num_bytes)

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._queue and not self._stopping and not self._spool_waiting():
                    self._condition.wait(timeout=self._limits.db_retry_s)
                batch = self._take_batch()
                if not batch and self._stopping:
                    return
            if batch:
                self._flush(batch)
                with self._condition:
                    self._resize(-sum(len(p.spans) for p in batch), -sum(p.num_bytes for p in batch))
            self._replay_one()

    def _take_batch(self) -> list[_Pending]:
        batch: list[_Pending] = []
        num_spans = 0
        while self._queue and (
            not batch or num_spans + len(self._queue[0].spans) <= self._limits.flush_max_spans
        ):
            pending = self._queue.popleft()
            batch.append(pending)
            num_spans += len(pending.spans)
        return batch

    def _flush(self, batch: list[_Pending]) -> None:
        spans = [span for pending in batch for span in pending.spans]
        if self._database_worth_trying():
            started = time.perf_counter()
            try:
                self._writer.write(spans)
            except DatabaseDown as error:
                self._mark_database_down(error)
            except RowsRefused:
                self._write_one_by_one(batch)
                return
            else:
                self._stats.flush_seconds.observe(time.perf_counter() - started)
                self._stats.spans_stored.inc(len(spans))
                self._mark_database_up()
                _resolve(batch, STORED)
                return
        self._spool_or_refuse(batch, spans)

    def _write_one_by_one(self, batch: list[_Pending]) -> None:
        for pending in batch:
            try:
                self._writer.write(pending.spans)
            except RowsRefused as error:
                logger.warning("PostgreSQL refused a request's spans: %s", error)
                pending.future.set_exception(WriteFailed(str(error)))
            except DatabaseDown as error:
                self._mark_database_down(error)
                self._spool_or_refuse([pending], pending.spans)
            else:
                self._stats.spans_stored.inc(len(pending.spans))
                pending.future.set_result(STORED)

    def _spool_or_refuse(self, batch: list[_Pending], spans: list[SpanRecord]) -> None:
        if self._spool is None:
            _fail(batch, Unavailable("PostgreSQL is unreachable", self._limits.retry_after_s))
            return
        try:
            self._spool.append(spans)
        except Exception as error:  # a full spool or a full/broken disk: refuse, never drop
            logger.error("cannot spool %d spans: %s", len(spans), error)
            _fail(batch, Unavailable(f"PostgreSQL is unreachable and {error}", self._limits.retry_after_s))
            return
        self._stats.spans_spooled.inc(len(spans))
        self._stats.spool_bytes.set(self._spool.num_bytes)
        _resolve(batch, SPOOLED)

    def _spool_waiting(self) -> bool:
        return self._spool is not None and self._spool.num_bytes > 0 and self._database_worth_trying()

    def _replay_one(self) -> None:
        """Write the oldest spooled batch back into PostgreSQL, when it looks reachable."""
        if self._spool is None or not self._spool.num_bytes or not self._database_worth_trying():
            return
        pending = self._spool.pending()
        if not pending:
            return
        try:
            spans = Spool.read(pending[0])
            self._writer.write(spans, expect_duplicates=True)
        except DatabaseDown as error:
            self._mark_database_down(error)
            return
        except RowsRefused as error:  # cannot happen for rows that passed decode; keep the file to inspect
            logger.error("PostgreSQL refused spooled batch %s: %s; moving it aside", pending[0], error)
            pending[0].rename(pending[0].with_suffix(".refused"))
            return
        self._spool.remove(pending[0])
        self._stats.spans_stored.inc(len(spans))
        self._stats.spool_bytes.set(self._spool.num_bytes)
        self._mark_database_up()

    def _database_worth_trying(self) -> bool:
        return self.database_up or time.monotonic() >= self._next_db_attempt

    def _mark_database_down(self, error: Exception) -> None:
        if self.database_up:
            logger.warning("PostgreSQL is unreachable (%s); spooling", error)
        self.database_up = False
        self._next_db_attempt = time.monotonic() + self._limits.db_retry_s

    def _mark_database_up(self) -> None:
        if not self.database_up:
            logger.info("PostgreSQL is reachable again")
        self.database_up = True


def _resolve(batch: list[_Pending], outcome: str) -> None:
    for pending in batch:
        pending.future.set_result(outcome)


def _fail(batch: list[_Pending], error: Exception) -> None:
    for pending in batch:
        pending.future.set_exception(error)
