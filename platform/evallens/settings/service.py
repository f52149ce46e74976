"""The reference service: which engine and model, its limits, budgets and telemetry."""

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from evallens.settings._base import DEFAULT_DATA_DIR, DataDir, settings_config
from evallens.settings.addresses import ServiceAddressSettings
from evallens.settings.auth import AuthSettings
from evallens.settings.database import DatabaseSettings
from evallens.settings.rag import CacheSettings, GuardSettings, RagSettings

DEFAULT_CHAT_MODEL_DIR = "smollm2-135m-instruct"


class ServiceSettings(
    ServiceAddressSettings, DatabaseSettings, AuthSettings, RagSettings, CacheSettings, GuardSettings
):
    """Everything ``evallens service`` reads: all from ``EVALLENS_*`` variables.

    The address, database (knowledge base, API keys), auth, retrieval, cache and guard knobs are
    inherited, so one object configures the whole service and each knob exists once.
    """

    model_config = settings_config()

    data_dir: DataDir = Field(
        default=DEFAULT_DATA_DIR,
        description="Directory for evallens' own data: models, vLLM caches, logs.",
    )
    service_name: str = Field(
        default="evallens-reference-service", description="OpenTelemetry `service.name` of the service."
    )
    engine: Literal["vllm", "openai"] = Field(
        default="vllm",
        description="`vllm`: vLLM in this process; `openai`: an OpenAI-compatible server (openai_base_url).",
    )
    model_path: Path | None = Field(
        default=None,
        description="vLLM model directory. Unset: the SmolLM2 that `evallens model pull` made.",
    )
    served_model_name: str | None = Field(
        default=None,
        description="Model name the API reports. Unset: the model directory's name (or `openai_model`).",
    )
    max_model_len: int = Field(default=2048, ge=16, description="Context window: prompt plus answer tokens.")
    kv_cache_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1024 * 1024,
        description="Bytes of memory vLLM may use for its KV cache.",
    )
    max_num_seqs: int = Field(default=8, ge=1, description="Sequences vLLM runs in one batch at most.")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        default="auto",
        description=(
            "Weights and activations dtype for vLLM. auto: bfloat16 on a GPU or a CPU with native "
            "bfloat16 (AVX512-BF16, AMX, Arm BF16), else float32, several times faster than emulated "
            "bfloat16 there. /v1/config shows the dtype in effect."
        ),
    )
    enable_prefix_caching: bool = Field(
        default=True, description="Let vLLM reuse KV blocks of shared prefixes."
    )
    openai_base_url: str | None = Field(
        default=None,
        description="Base URL (ending in /v1) of the OpenAI-compatible server for engine `openai`.",
    )
    openai_api_key: str | None = Field(
        default=None, description="Bearer token for the `openai` engine, if any."
    )
    openai_model: str | None = Field(
        default=None, description="Model name to request from the `openai` engine."
    )
    system_prompt: str = Field(
        default="You are a helpful assistant. Answer briefly.",
        description="System message put before the user's messages when they bring none.",
    )
    default_max_tokens: int = Field(default=256, ge=1, description="`max_tokens` when a request gives none.")
    default_temperature: float = Field(
        default=0.7, ge=0, le=2, description="`temperature` when a request gives none."
    )
    default_top_p: float = Field(default=1.0, gt=0, le=1, description="`top_p` when a request gives none.")
    max_in_flight: int = Field(default=8, ge=1, description="Requests sent to the engine at once.")
    max_queued: int = Field(
        default=32, ge=0, description="Requests waiting for an in-flight slot; beyond: 429."
    )
    retry_after_s: int = Field(
        default=1,
        ge=1,
        description="`Retry-After` seconds sent with a 429 and with the 503 for busy key lookups.",
    )
    ttft_budget_s: float = Field(
        default=30.0,
        gt=0,
        description=(
            "Seconds to the first token (queueing included): over it the engine request is aborted, "
            "counts against the engine breaker, and the answer is a semantic-cache stand-in or a 504."
        ),
    )
    total_budget_s: float = Field(
        default=120.0, gt=0, description="Seconds for a whole request before a 504."
    )
    service_max_body_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        description=(
            "Largest request body accepted (chat, documents, feedback), counted as its bytes arrive; "
            "over it: 413 before the rest is read. Also bounds one document's text."
        ),
    )
    service_max_body_bytes_in_flight: int = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        description=(
            "Body bytes all requests together may hold while they are read and handled, counted as they "
            "arrive; a request that would go over it is answered 429 with Retry-After, before its body "
            "is read when its declared length does not fit. At least EVALLENS_SERVICE_MAX_BODY_BYTES, so "
            "one body of the largest size always fits."
        ),
    )
    service_body_idle_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a request body may pause before the request is answered 408.",
    )
    service_body_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="Seconds a request body may take in all before the request is answered 408.",
    )
    service_request_head_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description=(
            "Seconds a connection may stay open without sending a whole request head (its first, or the "
            "next after an answer) before it is closed: each open connection holds a file descriptor."
        ),
    )
    service_key_attempts_per_minute: int = Field(
        default=20,
        ge=1,
        description=(
            "With auth on: API keys the service has to look up in PostgreSQL (not checked within "
            "auth_cache_ttl_s) that one client address may have refused (401/403) per minute, at once "
            "or spread out. Beyond it, that address's unknown keys are answered 429 with Retry-After "
            "without a lookup, while keys the service knows still get in. The address is the TCP "
            "peer's (X-Forwarded-For is not trusted): behind a proxy or load balancer, all its clients "
            "share the proxy's budget."
        ),
    )
    otlp_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces. Unset: no export.",
    )
    hour_usd: float = Field(
        default=1.0,
        ge=0,
        description="Price of the inference machine per hour: a request's cost is its share of engine time.",
    )
    route_small_model_path: Path | None = Field(
        default=None,
        description=(
            "Optional second, smaller vLLM model directory: short requests go to it (routing). Beside a "
            "vLLM main engine its own vLLM metrics (vllm:*) are not exported: /metrics carries the main "
            "engine's."
        ),
    )
    route_max_prompt_chars: int = Field(
        default=200,
        ge=1,
        description="Requests with prompts up to this many characters go to the small model.",
    )
    capture_content: bool = Field(
        default=True,
        description=(
            "Record the user's messages and the answer on the request span (gen_ai.input.messages / "
            "gen_ai.output.messages) so evals and case mining can read them; logs never hold prompt text."
        ),
    )
    log_level: str = Field(default="info", description="Log level of the service (uvicorn and evallens).")

    @field_validator("service_max_body_bytes_in_flight")
    @classmethod
    def _one_body_fits_the_budget(cls, value: int, info: ValidationInfo) -> int:
        max_body_bytes = info.data.get("service_max_body_bytes")
        if max_body_bytes is not None and value < max_body_bytes:
            raise ValueError(
                f"must be at least EVALLENS_SERVICE_MAX_BODY_BYTES ({max_body_bytes}), "
                "or a body of the largest accepted size could never be read"
            )
        return value

    @field_validator("data_dir", "model_path", "route_small_model_path")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @property
    def models_dir(self) -> Path:
        """Where `evallens model pull` puts model weights."""
        return self.data_dir / "models"

    @property
    def resolved_model_path(self) -> Path:
        """The vLLM model directory: the configured one or the pulled SmolLM2."""
        return self.model_path or self.models_dir / DEFAULT_CHAT_MODEL_DIR

    @property
    def cache_dir(self) -> Path:
        """vLLM, torch and temporary files of the service."""
        return self.data_dir / "cache"
