"""Bookkeeping of one chat request: its span, metrics and log line, filled in as it runs."""

import json
import time
from dataclasses import dataclass, field

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, format_trace_id

from evallens.service.engines.base import SamplingOptions
from evallens.service.tags import RequestTags
from evallens.service.telemetry import RequestRecord, ServiceMetrics, log_request, prompt_sha256
from evallens.telemetry import attributes as attr
from evallens.telemetry.cost import Price, gpu_time_cost_usd

OPERATION = "chat"
TIMEOUT_KIND = "timeout"  # ServiceError.kind of a missed time budget
CLIENT_CLOSED = 499  # nginx' convention for "the client went away"
EMPTY_PROMPT_SHA256 = prompt_sha256([])  # an answer given without the engine had no prompt


@dataclass
class RequestRecording:
    """The root span of a request and the counts that end up on it, in the metrics and in the log."""

    request_id: str
    span: Span
    metrics: ServiceMetrics
    stream: bool
    started: float = field(default_factory=time.perf_counter)
    model: str = ""
    route: str = ""
    prompt_hash: str = EMPTY_PROMPT_SHA256
    prompt_chars: int = 0
    num_prompt_tokens: int = 0
    num_output_tokens: int = 0
    first_token_at: float | None = None
    generation_started: float | None = None
    finish_reason: str | None = None
    engine_tokens: bool = False  # the engine produced the output (not a cache or a guard)
    concurrency: int = 1
    capture_content: bool = False
    answer_parts: list[str] = field(default_factory=list)
    ended: bool = False

    @classmethod
    def start(
        cls,
        tracer: Tracer,
        metrics: ServiceMetrics,
        request_id: str,
        tags: RequestTags,
        *,
        stream: bool,
        capture_content: bool = False,
    ) -> "RequestRecording":
        """Open the request's root span with the caller's tags."""
        span = tracer.start_span(OPERATION, kind=SpanKind.SERVER)
        span.set_attributes(
            {attr.GEN_AI_OPERATION_NAME: OPERATION, attr.STREAM: stream, **tags.span_attributes()}
        )
        return cls(
            request_id=request_id,
            span=span,
            metrics=metrics,
            stream=stream,
            capture_content=capture_content,
        )

    def set_input(self, messages: list[tuple[str, str]]) -> None:
        """The caller's messages (not the system prompt or retrieved context), when content is captured."""
        if self.capture_content:
            self.span.set_attribute(
                attr.GEN_AI_INPUT_MESSAGES,
                json.dumps([_genai_message(role, text) for role, text in messages], ensure_ascii=False),
            )

    @property
    def answer(self) -> str:
        """The answer's text so far."""
        return "".join(self.answer_parts)

    def set_request(
        self, model: str, provider: str, route: str, sampling: SamplingOptions, fingerprint: str
    ) -> None:
        """Record what was asked of which engine."""
        self.model, self.route = model, route
        self.span.update_name(f"{OPERATION} {model}")
        self.span.set_attributes(
            {
                attr.GEN_AI_PROVIDER_NAME: provider,
                attr.GEN_AI_REQUEST_MODEL: model,
                attr.GEN_AI_RESPONSE_MODEL: model,
                attr.GEN_AI_RESPONSE_ID: self.request_id,
                attr.GEN_AI_REQUEST_MAX_TOKENS: sampling.max_tokens,
                attr.GEN_AI_REQUEST_TEMPERATURE: sampling.temperature,
                attr.GEN_AI_REQUEST_TOP_P: sampling.top_p,
                attr.ROUTE: route,
                attr.CONFIG_FINGERPRINT: fingerprint,
            }
        )
        if sampling.seed is not None:
            self.span.set_attribute(attr.GEN_AI_REQUEST_SEED, sampling.seed)

    def set_prompt(self, texts: list[str], num_prompt_tokens: int | None) -> None:
        """Hash and length of the prompt (never its text), once for the span and the log line."""
        self.prompt_hash, self.prompt_chars = prompt_sha256(texts), sum(len(text) for text in texts)
        self.num_prompt_tokens = num_prompt_tokens or 0
        self.span.set_attributes({attr.PROMPT_HASH: self.prompt_hash, attr.PROMPT_LENGTH: self.prompt_chars})

    def mark_first_token(self) -> None:
        """The first token arrived: time to first token, measured from the request's arrival."""
        if self.first_token_at is None:
            self.first_token_at = time.perf_counter()
            self.metrics.ttft.labels(self.route).observe(self.first_token_at - self.started)

    @property
    def trace_id(self) -> str:
        """The request's trace id, hex."""
        return format_trace_id(self.span.get_span_context().trace_id)

    def end(
        self, status: int, error: str | None = None, *, error_type: str | None = None, hour_usd: float = 0.0
    ) -> None:
        """Close the span, count the request and write its log line (once). ``error`` is the kind the
        errors metric counts a failure under (one of a bounded set); ``error_type``, when it says more
        (a 500's exception class), is the span's ``error.type`` and the log line's error instead."""
        if self.ended:
            return
        self.ended = True
        now = time.perf_counter()
        latency_s = now - self.started
        ttft_s = None if self.first_token_at is None else self.first_token_at - self.started
        engine_time_s = 0.0 if self.generation_started is None else now - self.generation_started
        self.span.set_attributes(
            {
                attr.GEN_AI_USAGE_INPUT_TOKENS: self.num_prompt_tokens,
                attr.GEN_AI_USAGE_OUTPUT_TOKENS: self.num_output_tokens,
                attr.ENGINE_TIME_S: engine_time_s,
                attr.HTTP_RESPONSE_STATUS_CODE: status,
            }
        )
        if self.finish_reason is not None:
            self.span.set_attribute(attr.GEN_AI_RESPONSE_FINISH_REASONS, [self.finish_reason])
        if self.capture_content and (self.answer_parts or self.finish_reason is not None):
            output = {**_genai_message("assistant", self.answer), "finish_reason": self.finish_reason}
            self.span.set_attribute(attr.GEN_AI_OUTPUT_MESSAGES, json.dumps([output], ensure_ascii=False))
        if self.generation_started is not None:
            self.span.set_attribute(attr.ENGINE_CONCURRENT_REQUESTS, self.concurrency)
        if ttft_s is not None:
            self.span.set_attributes(
                {attr.TIME_TO_FIRST_TOKEN_S: ttft_s, attr.GEN_AI_SERVER_TIME_TO_FIRST_TOKEN: ttft_s}
            )
        if (
            cost := gpu_time_cost_usd(
                Price(self.model, gpu_hour_usd=hour_usd), engine_time_s, 1 / self.concurrency
            )
        ) is not None:
            self.span.set_attribute(attr.COST_USD, cost)
        if self.engine_tokens and ttft_s is not None and self.num_output_tokens > 1 and latency_s > ttft_s:
            rate = (self.num_output_tokens - 1) / (latency_s - ttft_s)
            self.span.set_attribute(attr.OUTPUT_TOKENS_PER_SECOND, rate)
            self.metrics.tokens_per_s.observe(rate)
        if error is not None:
            error_type = error_type or error
            if error == TIMEOUT_KIND:
                self.span.set_attribute(attr.TIMEOUT, True)
            self.span.set_attribute(attr.ERROR_TYPE, error_type)
            self.span.set_status(Status(StatusCode.ERROR, error_type))
            self.metrics.errors.labels(error).inc()
        self.metrics.requests.labels(self.route or "none", str(status)).inc()
        self.metrics.latency.labels(self.route or "none").observe(latency_s)
        self.metrics.tokens.labels("input").inc(self.num_prompt_tokens)
        self.metrics.tokens.labels("output").inc(self.num_output_tokens)
        self.span.end()
        log_request(
            RequestRecord(
                request_id=self.request_id,
                trace_id=self.trace_id,
                model=self.model,
                route=self.route,
                status=status,
                stream=self.stream,
                prompt_sha256=self.prompt_hash,
                prompt_chars=self.prompt_chars,
                input_tokens=self.num_prompt_tokens,
                output_tokens=self.num_output_tokens,
                latency_ms=round(latency_s * 1000, 3),
                ttft_ms=None if ttft_s is None else round(ttft_s * 1000, 3),
                finish_reason=self.finish_reason,
                error=error_type,
            )
        )


def _genai_message(role: str, text: str) -> dict[str, object]:
    """A message in the GenAI conventions' JSON shape: role and text parts."""
    return {"role": role, "parts": [{"type": "text", "content": text}]}
