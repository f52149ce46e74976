"""The bounded queue between receivers and the bulk writer, and the supervised thread that drains it.

Receivers hand in decoded spans and get a future that resolves only once the spans are durable:
committed, fsync'd to the spool while PostgreSQL is down, or (the rows PostgreSQL refuses) kept in
the quarantine. When PostgreSQL is down and the spool is off or full, the futures fail with
``Unavailable`` and the receivers answer 503. An unexpected error in the writer is logged with its
traceback and the writer restarts with backoff; meanwhile ``/healthz`` is unhealthy and new requests
get 503.
"""

import logging
import threading
import time
from collections import Counter, deque
from concurrent.futures import Future
from dataclasses import dataclass, field

from collector.copy_rows import CopyRows, PackedSpans
from collector.quarantine import Quarantine, QuarantineFailed, isolate
from collector.spool import Spool
from collector.stats import CollectorStats
from collector.write import DatabaseDown, Refusal, SpanWriter

logger = logging.getLogger(__name__)

STORED = "stored"
SPOOLED = "spooled"


@dataclass(frozen=True)
class Durable:
    """How a request's spans were made durable, and the reasons of those put in the quarantine."""

    how: str
    quarantined: tuple[str, ...] = ()


class Refused(Exception):
    """The collector cannot take these spans now; the client should retry after ``retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Overloaded(Refused):
    """The queue is full (spans or bytes)."""


class Unavailable(Refused):
    """PostgreSQL is unreachable and the spool cannot take the spans, or the writer is restarting."""


@dataclass(frozen=True)
class QueueLimits:
    """Bounds of the queue and of one flush, and how the writer waits after failures.

    ``project_share``: the part of the queue (spans and bytes) one API key's project may hold, so a
    project sending faster than PostgreSQL takes spans cannot fill it for every other project."""

    max_spans: int = 50_000
    max_bytes: int = 256 * 1024 * 1024
    flush_max_spans: int = 10_000
    retry_after_s: int = 2
    db_retry_s: float = 1.0
    restart_backoff_s: float = 0.5
    restart_backoff_max_s: float = 30.0
    project_share: float = 0.5


@dataclass(eq=False)
class _Pending:
    """One request's packed spans on their way: chunks are taken and made durable one by one."""

    packed: PackedSpans
    project: str | None = None
    future: "Future[Durable]" = field(default_factory=Future)
    next_chunk: int = 0
    chunks_done: int = 0
    how: str = STORED
    quarantined: list[str] = field(default_factory=list)

    def chunk_done(self, how: str, quarantined: list[str]) -> None:
        """One chunk is durable; the future resolves with the last one."""
        self.chunks_done += 1
        self.how = SPOOLED if how == SPOOLED else self.how
        self.quarantined.extend(quarantined)
        if self.chunks_done == len(self.packed.chunks) and not self.future.done():
            self.future.set_result(Durable(self.how, tuple(self.quarantined)))

    def chunk_failed(self, error: Exception) -> None:
        """One chunk could not be made durable: the request fails now (the client resends it whole)."""
        self.chunks_done += 1
        if not self.future.done():
            self.future.set_exception(error)

    @property
    def failed(self) -> bool:
        """The request already failed; its remaining chunks are skipped."""
        return self.future.done() and self.future.exception() is not None


@dataclass(frozen=True)
class _Piece:
    """One chunk of one request, as the writer takes it."""

    pending: _Pending
    index: int

    @property
    def chunk(self) -> CopyRows:
        return self.pending.packed.chunks[self.index]

    @property
    def num_spans(self) -> int:
        return self.pending.packed.chunk_spans(self.index)


class Ingestor:
    """Queue plus writer thread; ``submit`` is safe to call from any thread."""

    def __init__(
        self,
        writer: SpanWriter,
        spool: Spool | None,
        quarantine: Quarantine,
        limits: QueueLimits,
        stats: CollectorStats,
    ) -> None:
        self._writer, self._spool, self._quarantine = writer, spool, quarantine
        self._limits, self._stats = limits, stats
        self._queue: deque[_Pending] = deque()
        self._num_spans = self._num_bytes = 0
        self._project_spans: Counter[str] = Counter()
        self._project_bytes: Counter[str] = Counter()
        self._condition = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.database_up = True
        self.writer_running = False
        self._next_db_attempt = 0.0

    def check_admission(self, project: str | None = None) -> None:
        """Raise ``Refused`` when a new request would certainly be refused (before reading its body);
        ``project``: its API key's (None with auth off)."""
        if not self.writer_healthy:
            raise Unavailable("the collector's writer is restarting", self._limits.retry_after_s)
        if self._num_spans >= self._limits.max_spans or self._num_bytes >= self._limits.max_bytes:
            raise Overloaded("the collector's queue is full", self._limits.retry_after_s)
        if project is not None and self._over_share(project, 1, 1):  # not one more span fits
            raise self._share_taken(project)
        if self._database_worth_trying():
            return  # once the retry interval is over a request gets through, and its flush probes PostgreSQL
        if self._spool is None or self._spool.full:
            reason = "the spool is full" if self._spool is not None else "there is no spool"
            raise Unavailable(f"PostgreSQL is unreachable and {reason}", self._limits.retry_after_s)
        if project is not None and self._spool.share_taken(project):
            raise Unavailable(
                f"PostgreSQL is unreachable and project {project!r} already holds its share of the spool",
                self._limits.retry_after_s,
            )

    def submit(self, packed: PackedSpans, project: str | None = None) -> "Future[Durable]":
        """Queue one request's spans (``project``: its API key's); the future resolves to ``Durable``
        once they all are. A request finding the queue, or its project's share of it, empty gets in
        whatever its size."""
        pending = _Pending(packed, project)
        if not packed.num_spans:
            pending.future.set_result(Durable(STORED))
            return pending.future
        with self._condition:
            self.check_admission(project)
            if self._queue and (
                self._num_spans + packed.num_spans > self._limits.max_spans
                or self._num_bytes + packed.num_bytes > self._limits.max_bytes
            ):
                raise Overloaded("the collector's queue is full", self._limits.retry_after_s)
            if project is not None and self._over_share(project, packed.num_spans, packed.num_bytes):
                raise self._share_taken(project)
            self._queue.append(pending)
            self._resize(packed.num_spans, packed.num_bytes, project)
            self._condition.notify()
        return pending.future

    def _over_share(self, project: str, num_spans: int, num_bytes: int) -> bool:
        """Whether ``project`` has spans queued and would hold more than its share of the queue with
        ``num_spans`` and ``num_bytes`` more."""
        if not self._project_spans[project]:
            return False
        share = self._limits.project_share
        return (
            self._project_spans[project] + num_spans > self._limits.max_spans * share
            or self._project_bytes[project] + num_bytes > self._limits.max_bytes * share
        )

    def _share_taken(self, project: str) -> Overloaded:
        return Overloaded(
            f"project {project!r} already has its share of the collector's queue waiting to be written",
            self._limits.retry_after_s,
        )

    def start(self) -> None:
        """Start the writer thread; it also replays what this or an earlier run spooled."""
        self.writer_running = True
        self._thread = threading.Thread(target=self._supervise, name="collector-writer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Write what is queued, then stop the writer thread."""
        with self._condition:
            self._stopping = True
            self._condition.notify_all()
        if self._thread is not None:
            self._thread.join()
        self._writer.close()

    @property
    def writer_healthy(self) -> bool:
        """The writer thread is alive and not waiting to restart after a failure."""
        return self.writer_running and self._thread is not None and self._thread.is_alive()

    @property
    def num_queued_spans(self) -> int:
        """Spans accepted but not yet durable."""
        return self._num_spans

    def _resize(self, num_spans: int, num_bytes: int, project: str | None) -> None:
        self._num_spans += num_spans
        self._num_bytes += num_bytes
        if project is not None:
            self._project_spans[project] += num_spans
            self._project_bytes[project] += num_bytes
            if not self._project_spans[project]:  # a key per project that has spans queued, no more
                del self._project_spans[project], self._project_bytes[project]
        self._stats.queue_spans.set(self._num_spans)
        self._stats.queue_bytes.set(self._num_bytes)

    def _supervise(self) -> None:
        """Run the writer; after an unexpected error, log it and restart it with growing pauses."""
        backoff_s, failed_while_stopping = self._limits.restart_backoff_s, False
        while True:
            started = time.monotonic()
            self._set_writer_running(True)
            try:
                self._run()
                return
            except Exception:
                logger.exception("the collector's writer failed; restarting it in %.1f s", backoff_s)
            self._set_writer_running(False)
            self._stats.writer_restarts.inc()
            self._writer.close()
            if failed_while_stopping:
                self._fail_queued(Unavailable("the collector stopped", self._limits.retry_after_s))
                return
            with self._condition:
                failed_while_stopping = self._condition.wait_for(lambda: self._stopping, timeout=backoff_s)
            ran_s = time.monotonic() - started
            backoff_s = (
                self._limits.restart_backoff_s
                if ran_s > self._limits.restart_backoff_max_s
                else (min(backoff_s * 2, self._limits.restart_backoff_max_s))
            )

    def _set_writer_running(self, running: bool) -> None:
        self.writer_running = running
        self._stats.writer_up.set(1 if running else 0)

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._queue and not self._stopping and not self._background_waiting():
                    self._condition.wait(timeout=self._limits.db_retry_s)
                batch = self._take_batch()
                if not batch and self._stopping:
                    return
            if batch:
                try:
                    self._flush(batch)
                except BaseException as error:
                    # never acknowledged: the clients get 503 and resend (stored spans are skipped)
                    for piece in batch:
                        piece.pending.chunk_failed(
                            Unavailable(f"the writer failed: {error}", self._limits.retry_after_s)
                        )
                    raise
                finally:
                    with self._condition:
                        for piece in batch:
                            self._resize(-piece.num_spans, -len(piece.chunk.data), piece.pending.project)
            self._replay_one()
            self._import_dead_letters()

    def _take_batch(self) -> list[_Piece]:
        """Chunks from the front of the queue, up to ``flush_max_spans`` spans (at least one chunk)."""
        batch: list[_Piece] = []
        num_spans = 0
        while self._queue:
            pending = self._queue[0]
            piece = _Piece(pending, pending.next_chunk)
            if batch and num_spans + piece.num_spans > self._limits.flush_max_spans:
                break
            batch.append(piece)
            num_spans += piece.num_spans
            pending.next_chunk += 1
            if pending.next_chunk == len(pending.packed.chunks):
                self._queue.popleft()
        return batch

    def _fail_queued(self, error: Exception) -> None:
        with self._condition:
            while self._queue:
                pending = self._queue.popleft()
                for index in range(pending.next_chunk, len(pending.packed.chunks)):
                    chunk = pending.packed.chunks[index]
                    self._resize(-chunk.num_rows, -len(chunk.data), pending.project)
                    pending.chunk_failed(error)

    def _flush(self, batch: list[_Piece]) -> None:
        pieces: list[_Piece] = []
        for piece in batch:
            if piece.pending.failed:
                piece.pending.chunk_failed(
                    Unavailable("an earlier part of the request failed", self._limits.retry_after_s)
                )
            else:
                pieces.append(piece)
        if not pieces:
            return
        if self._database_worth_trying():
            rows = CopyRows.joined([piece.chunk for piece in pieces])
            started = time.perf_counter()
            try:
                refusals = isolate(self._writer, rows)
            except DatabaseDown as error:
                self._mark_database_down(error)
            else:
                self._stats.flush_seconds.observe(time.perf_counter() - started)
                self._mark_database_up()
                self._keep(pieces, refusals, rows.num_rows)
                return
        self._spool_or_refuse(pieces)

    def _keep(self, pieces: list[_Piece], refusals: list[Refusal], num_spans: int) -> None:
        """Resolve written pieces once their refused spans (if any) are in the quarantine."""
        reasons = {refusal.index: refusal.reason for refusal in refusals}
        self._stats.spans_stored.inc(num_spans - len(refusals))
        failure: QuarantineFailed | None = None
        if refusals:
            try:
                self._quarantine.put(refusals)
            except QuarantineFailed as error:
                logger.error("%s", error)
                failure = error
        first = 0
        for piece in pieces:
            mine = [reasons[row] for row in range(first, first + piece.num_spans) if row in reasons]
            first += piece.num_spans
            if mine and failure is not None:
                piece.pending.chunk_failed(Unavailable(str(failure), self._limits.retry_after_s))
            else:
                piece.pending.chunk_done(STORED, mine)

    def _spool_or_refuse(self, pieces: list[_Piece]) -> None:
        """Spool ``pieces``, a batch per project (each holds a share of the spool), or fail them."""
        if self._spool is None:
            for piece in pieces:
                piece.pending.chunk_failed(
                    Unavailable("PostgreSQL is unreachable", self._limits.retry_after_s)
                )
            return
        by_project: dict[str | None, list[_Piece]] = {}
        for piece in pieces:
            by_project.setdefault(piece.pending.project, []).append(piece)
        for project, mine in by_project.items():
            self._spool_project(self._spool, mine, project)

    def _spool_project(self, spool: Spool, pieces: list[_Piece], project: str | None) -> None:
        """Spool ``pieces``, all of ``project``, or fail them (the clients resend)."""
        rows = CopyRows.joined([piece.chunk for piece in pieces])
        try:
            spool.append(rows, project)
        except Exception as failure:  # a full spool or share, a full/broken disk: refuse, never drop
            logger.error("cannot spool %d spans: %s", rows.num_rows, failure)
            error = Unavailable(f"PostgreSQL is unreachable and {failure}", self._limits.retry_after_s)
            for piece in pieces:
                piece.pending.chunk_failed(error)
            return
        self._stats.spans_spooled.inc(rows.num_rows)
        self._stats.spool_bytes.set(spool.num_bytes)
        for piece in pieces:
            piece.pending.chunk_done(SPOOLED, [])

    def _background_waiting(self) -> bool:
        spooled = self._spool is not None and self._spool.num_bytes > 0
        return (spooled or self._quarantine.waiting) and self._database_worth_trying()

    def _replay_one(self) -> None:
        """Write the oldest spooled batch back into PostgreSQL (refused rows to the quarantine); a batch
        whose days need more new partitions than one flush creates takes several replays."""
        if self._spool is None or not self._spool.num_bytes or not self._database_worth_trying():
            return
        pending = self._spool.pending()
        if not pending:
            return
        try:
            rows = Spool.read(pending[0])
        except ValueError as error:
            logger.error("%s; kept as %s", error, self._spool.set_aside(pending[0]))
            return
        try:
            refusals = isolate(self._writer, rows, expect_duplicates=True)
            if any(refusal.partition_missing for refusal in refusals):
                # spread over more new days than one flush makes partitions for: the file stays, each
                # replay adds the next days' (what is stored is skipped), the last one quarantines
                self._mark_database_up()
                return
            if refusals:
                self._quarantine.put(refusals)
        except DatabaseDown as error:
            self._mark_database_down(error)
            return
        except QuarantineFailed as error:  # keep the file; the next replay tries again
            logger.error("%s", error)
            self._next_db_attempt = time.monotonic() + self._limits.db_retry_s
            return
        self._spool.remove(pending[0])
        self._stats.spans_stored.inc(rows.num_rows - len(refusals))
        self._stats.spool_bytes.set(self._spool.num_bytes)
        self._mark_database_up()

    def _import_dead_letters(self) -> None:
        if not self._quarantine.waiting or not self._database_worth_trying():
            return
        try:
            self._quarantine.import_one()
        except DatabaseDown as error:
            self._mark_database_down(error)

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
