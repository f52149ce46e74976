"""Decoding off the event loop: one bounded pool of worker processes shared by OTLP/HTTP and gRPC.

A worker turns one traces request body into ``PackedSpans``: inflate (gzip), parse (protobuf or JSON),
count, decode and validate, stamp the key's project, tag costs, and encode each span as the COPY row
the writer streams (``collector.copy_rows``); and one logs request body into the GenAI content rows it
holds (``collector.logs``). The receivers' threads, event loop and writer only move bytes and store
rows; everything per span and per log record happens here, once.

Two bounds keep memory flat whatever clients send: the bytes of request bodies being read or decoded
at once (``reserve``: over it, 429 and Retry-After / RESOURCE_EXHAUSTED; one API key's project may
hold only its share of them), and the spans or log records one request may hold (over it, 413 /
INVALID_ARGUMENT, checked before any is decoded).
"""

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, TypeVar

from collector import _wire
from collector._body import gunzip_capped
from collector.copy_rows import PackedSpans, pack_spans
from collector.decode import Rejections, iter_spans, message_groups
from collector.logs import LogBatch, LogsJob, decode_logs_body
from collector.otlp_json import (
    TRACE_LEVELS,
    MalformedRequest,
    count_json_entries,
    entries_named,
    iter_span_objects,
    json_request,
    load_json_request,
)
from collector.pricebook import PriceBook
from collector.records import SpanRecord
from collector.validate import (
    InvalidSpan,
    SpanLimits,
    check_entry_counts,
    check_event_count,
    check_record_count,
)
from evallens.telemetry import attributes as attr

logger = logging.getLogger(__name__)
BodyFormat = Literal["protobuf", "json"]
Job = TypeVar("Job")
Answer = TypeVar("Answer")


class DecoderBusy(Exception):
    """The bytes in flight are at their limit; the client should retry after ``retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class WorkerLost(Exception):
    """A decode worker died (killed, out of memory) under this request; the pool was started again."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class DecodeJob:
    """One request body and everything a worker needs to turn it into records."""

    body: bytes
    body_format: BodyFormat
    gzip: bool
    max_body_bytes: int
    limits: SpanLimits
    project: str | None
    prices: PriceBook


@dataclass(frozen=True)
class Decoded:
    """A worker's answer: the valid spans packed, and the rejected ones counted with reasons."""

    packed: PackedSpans
    num_rejected: int
    rejection_messages: tuple[str, ...]


def decode_body(job: DecodeJob) -> Decoded:
    """Runs in a worker: body bytes to packed, validated, project-stamped, cost-tagged spans.

    Raises ``BodyTooLarge``/``BadEncoding`` (gzip), ``MalformedRequest``, ``TooManyRecords`` or
    ``SpansTooLarge``. Protobuf is walked span by span (``collector._wire``), so memory follows the body,
    not its tree.
    """
    body = gunzip_capped(job.body, job.max_body_bytes) if job.gzip else job.body
    rejections = Rejections()
    try:
        if job.body_format == "json":
            # counted on the JSON document: a protobuf message for each of millions of empty spans
            # (``{}`` is 3 bytes) took ~1.4 GB and 40 s before the cap refused them
            document = load_json_request(body)
            cap = job.limits.max_spans_per_request
            check_entry_counts(*count_json_entries(document, TRACE_LEVELS, cap), job.limits, "spans")
            span_objects = iter_span_objects(document)
            check_record_count(len(span_objects), job.limits, "spans")
            check_event_count(sum(len(entries_named(span, ("events",))) for span in span_objects), job.limits)
            request, unreadable = json_request(document)
            for reason in unreadable:
                rejections.add(InvalidSpan(reason))
            groups, hex_ids = message_groups(request), True
        else:
            counted = _wire.count_entries(body, stop_after=job.limits.max_spans_per_request)
            check_entry_counts(counted.num_resources, counted.num_scopes, job.limits, "spans")
            check_record_count(counted.num_records, job.limits, "spans")
            groups, hex_ids = _wire.resource_groups(body), False
        spans = iter_spans(groups, job.limits, rejections, hex_ids=hex_ids)
        if job.project is not None:
            spans = stamped(spans, job.project)
        packed = pack_spans(job.prices.tagged(spans), job.limits.max_packed_bytes)
    except _wire.WireError as error:
        raise MalformedRequest(f"body is not a protobuf ExportTraceServiceRequest: {error}") from None
    return Decoded(packed, rejections.count, tuple(rejections.messages))


def stamped(spans: Iterator[SpanRecord], project: str) -> Iterator[SpanRecord]:
    """Every span put in ``project``, also where a client set ``evallens.project`` itself."""
    for span in spans:
        span.project = project
        for attributes in (span.attributes, span.resource):
            if attr.PROJECT in attributes:
                attributes[attr.PROJECT] = project
        yield span


M_MMAP_THRESHOLD = -3  # glibc mallopt parameter
MMAP_THRESHOLD_BYTES = 256 * 1024
PR_SET_PDEATHSIG = 1  # Linux prctl option


def return_freed_memory() -> None:
    """Keep large buffers (request bodies, packed results) in their own mappings, given back to the
    system when freed. glibc otherwise raises its mmap threshold after the first large free and keeps
    later ones on the heap, so one large request leaves a process's RSS high for good."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


def start_worker(collector_pid: int) -> None:
    """Runs first in each worker: die with the collector, and give freed memory back.

    A worker waits on a pipe it also holds the writing end of, so it would never see the collector
    go (SIGKILL, OOM); the kernel's parent-death signal ends it instead.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != collector_pid:  # the collector died before the signal was asked for
        os._exit(0)
    return_freed_memory()


def _warm_up() -> int:
    return os.getpid()


class DecodePool:
    """Worker processes (``spawn``ed: the collector's threads must not be forked) and the byte budget."""

    def __init__(
        self, num_workers: int, max_bytes_in_flight: int, retry_after_s: int, project_share: float = 0.5
    ) -> None:
        self.num_workers = num_workers or os.cpu_count() or 1
        self.max_bytes_in_flight = max_bytes_in_flight
        self._project_share = project_share
        self._project_bytes: Counter[str] = Counter()
        self._retry_after_s = retry_after_s
        self._executor = self._new_executor()
        self._lock = threading.Lock()
        self.bytes_in_flight = 0
        self.num_restarts = 0
        self.worker_pids: list[int] = []

    def _new_executor(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("spawn")
        return ProcessPoolExecutor(
            self.num_workers, mp_context=context, initializer=start_worker, initargs=(os.getpid(),)
        )

    def start(self) -> None:
        """Start every worker now, so the first requests do not wait for a Python start-up."""
        futures = [self._executor.submit(_warm_up) for _ in range(self.num_workers)]
        self.worker_pids = sorted({future.result() for future in futures})

    @contextmanager
    def reserve(self, num_bytes: int = 0, project: str | None = None) -> Iterator["Reservation"]:
        """A share of the byte budget for one request body (``project``: its API key's, None with auth
        off), given back on exit."""
        reservation = Reservation(self, project)
        try:
            reservation.cover(num_bytes)
            yield reservation
        finally:
            reservation.release()

    def _take(self, num_bytes: int, held: int, project: str | None) -> None:
        with self._lock:
            others = self.bytes_in_flight - held
            # a request alone is always let in, so one as large as the request limit gets through
            if others and others + held + num_bytes > self.max_bytes_in_flight:
                raise DecoderBusy(
                    f"the collector is reading and decoding {others} bytes of other requests",
                    self._retry_after_s,
                )
            if project is not None:
                # and so is a project's one request; its others only within the project's share
                own = self._project_bytes[project] - held
                if own and own + held + num_bytes > self.max_bytes_in_flight * self._project_share:
                    raise DecoderBusy(
                        f"the collector is reading and decoding {own} bytes of project {project!r}'s "
                        "other requests, its share",
                        self._retry_after_s,
                    )
                self._project_bytes[project] += num_bytes
            self.bytes_in_flight += num_bytes

    def _give_back(self, num_bytes: int, project: str | None) -> None:
        with self._lock:
            self.bytes_in_flight -= num_bytes
            if project is not None:
                self._project_bytes[project] -= num_bytes
                if not self._project_bytes[project]:
                    del self._project_bytes[project]

    async def decode(self, job: DecodeJob) -> Decoded:
        """``decode_body`` in a worker, awaited without blocking the event loop."""
        return await self._run(decode_body, job)

    def decode_blocking(self, job: DecodeJob) -> Decoded:
        """``decode_body`` in a worker, waited for by the calling (gRPC) thread."""
        return self._run_blocking(decode_body, job)

    async def decode_logs(self, job: LogsJob) -> LogBatch:
        """``decode_logs_body`` in a worker, awaited without blocking the event loop."""
        return await self._run(decode_logs_body, job)

    def decode_logs_blocking(self, job: LogsJob) -> LogBatch:
        """``decode_logs_body`` in a worker, waited for by the calling (gRPC) thread."""
        return self._run_blocking(decode_logs_body, job)

    async def _run(self, work: Callable[[Job], Answer], job: Job) -> Answer:
        executor = self._executor
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, work, job)
        except BrokenProcessPool:
            raise self._replace(executor) from None

    def _run_blocking(self, work: Callable[[Job], Answer], job: Job) -> Answer:
        executor = self._executor
        try:
            return executor.submit(work, job).result()
        except BrokenProcessPool:
            raise self._replace(executor) from None

    def _replace(self, broken: ProcessPoolExecutor) -> WorkerLost:
        """Start a new pool in place of ``broken`` (once, however many requests saw it break)."""
        with self._lock:
            if self._executor is broken:
                logger.error("a decode worker died; starting the decode pool again")
                self._executor = self._new_executor()
                self.num_restarts += 1
                broken.shutdown(wait=False, cancel_futures=True)
        return WorkerLost("a decode worker died while decoding this request", self._retry_after_s)

    def close(self) -> None:
        """Stop the workers."""
        self._executor.shutdown(wait=True, cancel_futures=True)


class Reservation:
    """The bytes one request holds of a pool's budget; grows as its body is read."""

    def __init__(self, pool: DecodePool, project: str | None = None) -> None:
        self._pool, self._project = pool, project
        self.num_bytes = 0

    def cover(self, total_bytes: int) -> None:
        """Hold at least ``total_bytes``; ``DecoderBusy`` when the budget cannot take them now."""
        if total_bytes > self.num_bytes:
            self._pool._take(total_bytes - self.num_bytes, self.num_bytes, self._project)
            self.num_bytes = total_bytes

    def release(self) -> None:
        """Give everything back."""
        self._pool._give_back(self.num_bytes, self._project)
        self.num_bytes = 0
