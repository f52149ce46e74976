"""What the HTTP and gRPC receivers share: admission, decode in the pool, count, queue, the answer."""

from concurrent.futures import Future
from contextlib import AbstractContextManager

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from collector.pipeline import Durable, Ingestor
from collector.pricebook import PriceBook
from collector.stats import CollectorStats
from collector.validate import SpanLimits
from collector.workers import BodyFormat, Decoded, DecodeJob, DecodePool, Reservation

MAX_SHOWN_REASONS = 5


class TraceReceiver:
    """Turns one export request body into queued spans and, once they are durable, the OTLP answer."""

    def __init__(
        self,
        ingestor: Ingestor,
        pool: DecodePool,
        span_limits: SpanLimits,
        max_body_bytes: int,
        stats: CollectorStats,
        prices: PriceBook,
    ) -> None:
        self.ingestor, self.pool = ingestor, pool
        self.span_limits, self.max_body_bytes = span_limits, max_body_bytes
        self.stats = stats
        self.prices = prices  # replaced whole by the price refresher; readers see one book or the other

    def admit(self, num_bytes: int = 0, project: str | None = None) -> AbstractContextManager[Reservation]:
        """Raise ``Refused`` when the queue (or ``project``'s share of it) or writer cannot take a request
        now; else a reservation of its body bytes to enter (``DecoderBusy`` there when the decode
        budget is spent)."""
        self.ingestor.check_admission(project)
        return self.pool.reserve(num_bytes, project)

    def job(self, body: bytes, body_format: BodyFormat, gzip: bool, project: str | None) -> DecodeJob:
        """The decode job of one request (``project`` from its API key overrides what spans claim)."""
        return DecodeJob(body, body_format, gzip, self.max_body_bytes, self.span_limits, project, self.prices)

    def queue(self, decoded: Decoded, project: str | None = None) -> "Future[Durable]":
        """Count and queue decoded spans (``project``: the API key's); the future resolves once they
        are durable."""
        self.stats.spans_received.inc(decoded.packed.num_spans + decoded.num_rejected)
        self.stats.spans_rejected.inc(decoded.num_rejected)
        return self.ingestor.submit(decoded.packed, project)

    def refused(self, error: Exception) -> None:
        """Count a request answered with a refusal."""
        self.stats.requests_refused.labels(reason=type(error).__name__.lower()).inc()


def export_response(decoded: Decoded, durable: Durable) -> ExportTraceServiceResponse:
    """The OTLP answer: empty on full success, ``partial_success`` for rejected or quarantined spans."""
    response = ExportTraceServiceResponse()
    num_rejected = decoded.num_rejected + len(durable.quarantined)
    if num_rejected:
        reasons = list(decoded.rejection_messages)
        reasons += [f"stored in the quarantine: {reason}" for reason in durable.quarantined]
        shown = "; ".join(reasons[:MAX_SHOWN_REASONS])
        more = num_rejected - min(len(reasons), MAX_SHOWN_REASONS)
        message = f"{num_rejected} spans rejected: {shown}" + (f" (and {more} more)" if more > 0 else "")
        response.partial_success.CopyFrom(
            ExportTracePartialSuccess(rejected_spans=num_rejected, error_message=message)
        )
    return response
