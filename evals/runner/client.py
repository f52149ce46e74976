"""One streamed chat completion against an OpenAI-compatible endpoint, measured and parsed."""

import json
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import httpx

from evallens.credentials import masked_excerpt
from evallens.telemetry.attributes import (
    CACHE_CONTROL_NO_CACHE,
    HEADER_CACHE_CONTROL,
    HEADER_EVAL_CASE_ID,
    HEADER_EVAL_RUN_ID,
    HEADER_TRACE_ID,
)
from evallens.telemetry.messages import EARLY_FINISH_REASONS, clean_text
from evals.metrics.recall import document_id

EXTENSION_FIELD = "evallens"
TRACE_ID_HEADER = HEADER_TRACE_ID
TRACEPARENT_HEADER = "traceparent"
MAX_TOKEN_COUNT = 2**31 - 1  # eval_results stores token counts as INTEGER


@dataclass
class Completion:
    """What one request returned (or how it failed), with client-side timings."""

    text: str | None = None
    retrieved_ids: list[str] = field(default_factory=list)
    latency_ms: float | None = None
    ttft_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    exact_cache_hit: bool | None = None
    semantic_cache_hit: bool | None = None
    degraded: bool | None = None
    trace_id: str | None = None
    finish_reason: str | None = None
    error: str | None = None
    connection_failed: bool = False


@dataclass(frozen=True)
class ChatRequest:
    """The body and eval headers of one case's request."""

    model: str
    messages: list[dict[str, str]]
    run_id: str
    case_key: str
    temperature: float
    max_tokens: int
    no_cache: bool = False

    def body(self) -> dict[str, Any]:
        """The JSON body: streamed, with usage in the final chunk."""
        return {
            "model": self.model,
            "messages": self.messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    def headers(self) -> dict[str, str]:
        """Headers that tie the service's trace to this run and case (and ask it to skip its caches)."""
        headers = {HEADER_EVAL_RUN_ID: self.run_id, HEADER_EVAL_CASE_ID: _header_value(self.case_key)}
        if self.no_cache:
            headers[HEADER_CACHE_CONTROL] = CACHE_CONTROL_NO_CACHE
        return headers


def _header_value(text: str) -> str:
    """``text`` as an HTTP header value: as it is when printable ASCII, else its UTF-8 percent-encoded."""
    if text.isascii() and text.isprintable():
        return text
    return urllib.parse.quote(text, safe="")


async def complete(client: httpx.AsyncClient, url: str, request: ChatRequest) -> Completion:
    """Send one streamed request; a failure is returned as ``Completion.error``, never raised."""
    result = Completion()
    started = time.perf_counter()
    try:
        async with client.stream("POST", url, json=request.body(), headers=request.headers()) as response:
            result.trace_id = trace_id_from_headers(response.headers)
            if response.status_code != 200:
                body = (await response.aread()).decode(errors="replace")
                result.error = f"HTTP {response.status_code}: {masked_excerpt(body, 200)}"
            elif response.headers.get("content-type", "").startswith("application/json"):
                _apply_chunk(result, json.loads(await response.aread()), started)
            else:
                await _read_stream(response, result, started)
    except httpx.HTTPError as error:
        # httpx quotes what it could not parse (a header line, a URL): it may hold a credential
        result.error = f"{type(error).__name__}: {masked_excerpt(str(error).strip(), 200)}"
        result.connection_failed = isinstance(error, httpx.ConnectError)
    except (ValueError, RecursionError) as error:  # not JSON, or JSON not shaped as a chat completion
        result.error = f"unreadable response: {str(error)[:200]}"
    # a cut text scored as the target's answer would read as a quality drop
    if result.error is None and result.finish_reason in EARLY_FINISH_REASONS:
        result.error = f"the target ended the answer early (finish_reason {result.finish_reason!r})"
    result.latency_ms = (time.perf_counter() - started) * 1000
    if result.error is None and result.text is None:
        result.text = ""
    return result


async def _read_stream(response: httpx.Response, result: Completion, started: float) -> None:
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            break
        chunk = _object(json.loads(data), "a stream chunk")
        if "error" in chunk and not chunk.get("choices"):
            result.error = f"stream error: {masked_excerpt(json.dumps(chunk['error']), 200)}"
            return
        _apply_chunk(result, chunk, started)


def _apply_chunk(result: Completion, body: object, started: float) -> None:
    chunk = _object(body, "a completion")
    choices = chunk.get("choices") or []
    if not isinstance(choices, list):
        raise ValueError("'choices' is not a list")
    for choice in choices:
        choice = _object(choice, "a choice")
        piece = _object(choice.get("delta") or choice.get("message") or {}, "a message").get("content")
        if piece is not None and not isinstance(piece, str):
            raise ValueError("a message's content is not text")
        if piece:
            if result.ttft_ms is None:
                result.ttft_ms = (time.perf_counter() - started) * 1000
            result.text = (result.text or "") + piece
        finish_reason = choice.get("finish_reason")
        if finish_reason is not None and not isinstance(finish_reason, str):
            raise ValueError("a choice's finish_reason is not text")
        result.finish_reason = finish_reason or result.finish_reason
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        result.input_tokens = _token_count(usage, "prompt_tokens", result.input_tokens)
        result.output_tokens = _token_count(usage, "completion_tokens", result.output_tokens)
    extension = chunk.get(EXTENSION_FIELD)
    if isinstance(extension, dict):
        _apply_extension(result, extension)


def _object(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    return value


def _token_count(usage: dict[str, Any], key: str, current: int | None) -> int | None:
    value = usage.get(key)
    if value is None:
        return current
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        raise ValueError(f"usage.{key} is not a token count")
    return value


def _apply_extension(result: Completion, extension: dict[str, Any]) -> None:
    cited = extension.get("retrieved_ids")
    if isinstance(cited, list):
        documents = [document_id(clean_text(str(item))) for item in cited]
        result.retrieved_ids = list(dict.fromkeys(documents))
    cache = extension.get("cache")
    if isinstance(cache, dict):
        result.exact_cache_hit = bool(cache.get("exact", False))
        result.semantic_cache_hit = bool(cache.get("semantic", False))
    if "degraded" in extension:
        result.degraded = bool(extension["degraded"])


def trace_id_from_headers(headers: httpx.Headers) -> str | None:
    """The trace id from ``x-trace-id``, or from a W3C ``traceparent`` response header."""
    explicit = headers.get(TRACE_ID_HEADER)
    if explicit:
        return str(explicit).strip().lower()
    parent = headers.get(TRACEPARENT_HEADER)
    if parent:
        parts = parent.strip().split("-")
        if len(parts) >= 3 and len(parts[1]) == 32:
            return str(parts[1]).lower()
    return None
