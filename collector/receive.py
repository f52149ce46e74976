"""What the HTTP and gRPC receivers share: decode, tag costs, count, queue, and build the answer."""

from concurrent.futures import Future

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from collector.decode import SpanLimits, decode_request
from collector.pipeline import Ingestor, Refused
from collector.prices import PriceBook
from collector.records import DecodedBatch, SpanRecord
from collector.stats import CollectorStats
from evallens.telemetry import attributes as attr


class TraceReceiver:
    """Turns one export request into queued records and, later, its ``ExportTraceServiceResponse``."""

    def __init__(
        self, ingestor: Ingestor, span_limits: SpanLimits, stats: CollectorStats, prices: PriceBook
    ) -> None:
        self.ingestor = ingestor
        self.span_limits = span_limits
        self.stats = stats
        self.prices = prices  # replaced whole by the price refresher; readers see one book or the other

    def accept(
        self, request: ExportTraceServiceRequest, num_bytes: int, project: str | None = None
    ) -> tuple[DecodedBatch, Future[str]]:
        """Decode and queue ``request``; the future resolves once its valid spans are durable.

        ``project`` (from the request's API key) overrides whatever project the spans claim.
        """
        batch = decode_request(request, self.span_limits)
        if project is not None:
            stamp_project(batch.spans, project)
        self.prices.tag_costs(batch.spans)
        self.stats.spans_received.inc(len(batch.spans) + batch.num_rejected)
        self.stats.spans_rejected.inc(batch.num_rejected)
        try:
            future = self.ingestor.submit(batch.spans, num_bytes)
        except Refused as error:
            self.stats.requests_refused.labels(reason=type(error).__name__.lower()).inc()
            raise
        return batch, future


def stamp_project(spans: list[SpanRecord], project: str) -> None:
    """Put every span in ``project``, also where a client set ``evallens.project`` itself."""
    for span in spans:
        span.project = project
        for attributes in (span.attributes, span.resource):
            if attr.PROJECT in attributes:
                attributes[attr.PROJECT] = project


def export_response(batch: DecodedBatch) -> ExportTraceServiceResponse:
    """The OTLP answer: empty on full success, ``partial_success`` when spans were rejected."""
    response = ExportTraceServiceResponse()
    if batch.num_rejected:
        response.partial_success.CopyFrom(
            ExportTracePartialSuccess(rejected_spans=batch.num_rejected, error_message=batch.error_message)
        )
    return response
