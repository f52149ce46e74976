"""Settings of the collector: where it listens, how much it buffers, where it spools, what it scrapes."""

from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from evallens.settings._base import ProjectName, settings_config
from evallens.settings.auth import AuthSettings
from evallens.settings.database import DatabaseSettings

MIB = 1024 * 1024
# The longest key (project, tenant, user, feature, eval run or case id, model) the collector keeps by
# default; the reference service refuses longer tag headers, whose spans the collector would reject.
DEFAULT_MAX_KEY_CHARS = 256
# Quarantined spans `evallens collector quarantine retry` reads, writes and settles at a time unless
# --batch-size says otherwise: a quarantine of millions is never held in memory whole.
DEFAULT_QUARANTINE_RETRY_BATCH = 1000


class CollectorSettings(DatabaseSettings, AuthSettings):
    """The OTLP receiver (HTTP and gRPC), its bulk writer and spool, and the Prometheus scraper."""

    model_config = settings_config()

    collector_http_host: str = Field(default="127.0.0.1", description="Bind address of OTLP/HTTP.")
    collector_http_port: int = Field(
        default=4318, ge=0, le=65535, description="Port of OTLP/HTTP (/v1/traces, /metrics); 0 picks one."
    )
    collector_grpc_enabled: bool = Field(default=True, description="Whether to serve OTLP/gRPC at all.")
    collector_grpc_host: str = Field(default="127.0.0.1", description="Bind address of OTLP/gRPC.")
    collector_grpc_port: int = Field(
        default=4317, ge=0, le=65535, description="Port of OTLP/gRPC; 0 picks a free one."
    )
    collector_grpc_workers: int = Field(default=8, ge=1, description="Threads serving gRPC exports.")
    collector_grpc_max_connection_age_s: float = Field(
        default=60.0,
        gt=0,
        description=(
            "Seconds after which a gRPC connection is asked to close (clients reconnect); its calls "
            "then have collector_grpc_connection_grace_s to finish. A call holds a worker thread "
            "while its message arrives, so this bounds how long one that never sends can hold it."
        ),
    )
    collector_grpc_connection_grace_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a gRPC connection past its age keeps its open calls before it is closed.",
    )
    collector_max_request_bytes: int = Field(
        default=16 * MIB, ge=1024, description="Largest request body accepted, before and after gzip."
    )
    collector_body_idle_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds an HTTP request body may pause before the request is answered 408.",
    )
    collector_body_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="Seconds an HTTP request body may take in all before the request is answered 408.",
    )
    collector_request_head_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description=(
            "Seconds an HTTP connection may stay open without sending a whole request head (its first, "
            "or the next after an answer) before it is closed: each open connection holds a file "
            "descriptor."
        ),
    )
    collector_max_concurrent_requests: int = Field(
        default=64,
        ge=1,
        description=(
            "Export requests served at once, over HTTP and over gRPC (there at most "
            "collector_grpc_workers), each counted once its API key is accepted: idle and refused "
            "connections hold none; more are answered 503 (gRPC: UNAVAILABLE), with a retry delay."
        ),
    )
    collector_key_attempts_per_minute: int = Field(
        default=20,
        ge=1,
        description=(
            "With auth on: API keys the collector has to look up in PostgreSQL (not checked within "
            "auth_cache_ttl_s) that one client address may have refused (401/403) per minute, at once "
            "or spread out. Beyond it, that address's unknown keys are answered 429 with Retry-After "
            "(gRPC: RESOURCE_EXHAUSTED) without a lookup, while keys the collector knows still get in. "
            "The address is the TCP peer's (X-Forwarded-For is not trusted): behind a proxy, load "
            "balancer or OpenTelemetry Collector, all its clients share the proxy's budget."
        ),
    )
    collector_queue_max_spans: int = Field(
        default=50_000, ge=1, description="Spans waiting to be written before new requests get 429."
    )
    collector_queue_max_bytes: int = Field(
        default=128 * MIB,
        ge=1024,
        description=(
            "Bytes of decoded (packed) spans waiting to be written before new requests get 429; a request "
            "whose spans alone decode to more (each span's row repeats its resource) gets 413 "
            "(gRPC: INVALID_ARGUMENT)."
        ),
    )
    collector_project_share: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description=(
            "Part of the queue (spans and bytes), of collector_max_inflight_bytes, of "
            "collector_max_concurrent_requests (HTTP; gRPC: of the calls being served) and of "
            "collector_spool_max_bytes one API key's project may take; beyond it that project gets 429 "
            "(503 for the spool, while PostgreSQL is unreachable) while others still get in (a "
            "project's one request always may). With auth off every request counts as one project's."
        ),
    )
    collector_max_inflight_bytes: int = Field(
        default=64 * MIB,
        ge=1024,
        description=(
            "Bytes of request bodies being read or decoded at once (HTTP and gRPC together); beyond "
            "it, 429 with Retry-After (gRPC: RESOURCE_EXHAUSTED). A request alone always gets in."
        ),
    )
    collector_max_spans_per_request: int = Field(
        default=500_000,
        ge=1,
        description=(
            "Most spans (or log records) one export request may hold, and resource entries, scope "
            "entries and span events; more: 413 (gRPC: INVALID_ARGUMENT)."
        ),
    )
    collector_decode_workers: int = Field(
        default=0, ge=0, description="Worker processes decoding requests; 0 means one per CPU core."
    )
    collector_flush_max_spans: int = Field(
        default=10_000, ge=1, description="Most spans written in one COPY transaction."
    )
    collector_retry_after_s: int = Field(
        default=2,
        ge=1,
        description=(
            "Retry-After seconds sent with 503/429 answers (an API key PostgreSQL cannot check now "
            "gets a fixed few seconds)."
        ),
    )
    collector_spool_enabled: bool = Field(
        default=True, description="Spool acknowledged spans to local disk while PostgreSQL is down."
    )
    collector_spool_dir: Path | None = Field(
        default=None, description="Spool directory; unset means <data_dir>/collector/spool."
    )
    collector_spool_max_bytes: int = Field(
        default=1024 * MIB,
        ge=0,
        description=(
            "Spool size beyond which requests get 503 instead (spans are refused, never dropped); one "
            "project may hold collector_project_share of it, counted from the spooled files' names, so "
            "across a restart too."
        ),
    )
    collector_db_retry_s: float = Field(
        default=1.0, gt=0, description="Seconds between reconnection attempts while PostgreSQL is down."
    )
    collector_price_refresh_s: float = Field(
        default=60.0, gt=0, description="Seconds between reloads of the model price table."
    )
    collector_span_max_age_days: int = Field(
        default=365,
        ge=1,
        description="Spans that started (log records whose time is) longer ago than this are rejected.",
    )
    collector_max_new_days_per_flush: int = Field(
        default=8,
        ge=1,
        description=(
            "Most daily span partitions one flush creates (each locks the spans table while it is "
            "made): yesterday, today and tomorrow first, then the flush's projects take turns, each "
            "getting its nearest new day. Spans of further new days go to the quarantine "
            "(`evallens collector quarantine retry` stores them); a spooled batch is written over "
            "several replays instead."
        ),
    )
    collector_span_max_future_s: int = Field(
        default=86_400,
        ge=0,
        description="Spans that start (log records whose time is) this far in the future are rejected.",
    )
    collector_span_max_duration_s: int = Field(
        default=7 * 86_400, ge=1, description="Spans that last longer than this are rejected."
    )
    collector_max_key_chars: int = Field(
        default=DEFAULT_MAX_KEY_CHARS,
        ge=16,
        le=512,
        description=(
            "Longest project, tenant, user, feature, eval run/case id or model accepted; a longer one "
            "rejects the span (these columns are indexed and grouped on)."
        ),
    )
    collector_max_text_chars: int = Field(
        default=1024,
        ge=16,
        description="Span, service and scope names and status messages are cut to this (ending in '…').",
    )
    collector_max_tokens: int = Field(
        default=1_000_000_000, ge=1, description="Largest token count accepted; more rejects the span."
    )
    collector_max_cost_usd: float = Field(
        default=1_000_000.0, gt=0, description="Largest cost (USD) of one span accepted; more rejects it."
    )
    collector_writer_backoff_s: float = Field(
        default=0.5, gt=0, description="First pause before restarting a writer that failed unexpectedly."
    )
    collector_writer_backoff_max_s: float = Field(
        default=30.0, gt=0, description="Longest pause before restarting a writer that failed unexpectedly."
    )
    collector_scrape_targets: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Prometheus /metrics URLs to scrape, comma-separated (e.g. the service and vLLM).",
    )
    collector_scrape_interval_s: float = Field(
        default=15.0, gt=0, description="Seconds between two scrapes of every target."
    )
    collector_scrape_timeout_s: float = Field(default=5.0, gt=0, description="Timeout of one scrape.")
    collector_scrape_project: ProjectName = Field(
        default="default",
        min_length=1,
        description="Project the scraped samples belong to (the project whose service the targets are).",
    )

    @field_validator("collector_scrape_targets", mode="before")
    @classmethod
    def _split_targets(cls, value: object) -> object:
        if isinstance(value, str):
            return [target.strip() for target in value.split(",") if target.strip()]
        return value

    @field_validator("collector_spool_dir")
    @classmethod
    def _expand_spool_dir(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @property
    def spool_dir(self) -> Path:
        """Where acknowledged-but-unwritten spans wait for PostgreSQL."""
        return self.collector_spool_dir or self.data_dir / "collector" / "spool"
