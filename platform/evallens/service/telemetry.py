"""The service's tracer provider, Prometheus metrics and per-request log line."""

import hashlib
import json
import logging
from dataclasses import asdict, dataclass

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from evallens.settings import ServiceSettings
from evallens.telemetry import attributes, metrics

REQUEST_LOGGER = "evallens.service.requests"
LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
RATE_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)


def create_tracer_provider(settings: ServiceSettings) -> TracerProvider:
    """A tracer provider named after the service, exporting over OTLP/HTTP when an endpoint is set."""
    provider = TracerProvider(resource=Resource.create({attributes.SERVICE_NAME: settings.service_name}))
    if settings.otlp_endpoint:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.otlp_endpoint)))
    return provider


class ServiceMetrics:
    """The service's own Prometheus metrics, in a registry of their own (vLLM's live in the default one)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            metrics.REQUESTS, "Chat requests by route and status.", ["route", "status"], registry=r
        )
        self.latency = Histogram(
            metrics.REQUEST_LATENCY_SECONDS,
            "Request latency.",
            ["route"],
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        self.ttft = Histogram(
            metrics.TIME_TO_FIRST_TOKEN_SECONDS,
            "Time to first token, queueing included.",
            ["route"],
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        self.tokens = Counter(metrics.TOKENS, "Tokens in and out.", ["direction"], registry=r)
        self.tokens_per_s = Histogram(
            metrics.OUTPUT_TOKENS_PER_SECOND,
            "Output tokens per second per request.",
            buckets=RATE_BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge(metrics.REQUESTS_IN_FLIGHT, "Requests at the engine.", registry=r)
        self.queued = Gauge(metrics.REQUESTS_QUEUED, "Requests waiting for an in-flight slot.", registry=r)
        self.errors = Counter(metrics.ERRORS, "Failed requests by kind.", ["kind"], registry=r)

    def exposition(self) -> bytes:
        """The service's metrics followed by vLLM's engine metrics, in one Prometheus text page."""
        exposition: bytes = generate_latest(self.registry) + generate_latest(REGISTRY)
        return exposition


@dataclass(frozen=True)
class RequestRecord:
    """What the log line says about a request: sizes and a hash of the prompt, never its text."""

    request_id: str
    trace_id: str
    model: str
    route: str
    status: int
    stream: bool
    prompt_sha256: str
    prompt_chars: int
    input_tokens: int
    output_tokens: int
    latency_ms: float
    ttft_ms: float | None
    finish_reason: str | None
    error: str | None


def prompt_sha256(texts: list[str]) -> str:
    """A stable hash of the prompt's messages, to find identical prompts without storing them."""
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode()).hexdigest()


def log_request(record: RequestRecord) -> None:
    """One structured JSON line per request (encoded only when someone reads the log)."""
    logger = logging.getLogger(REQUEST_LOGGER)
    if logger.isEnabledFor(logging.INFO):
        logger.info(json.dumps(asdict(record), sort_keys=True))
