"""Any OpenAI-compatible server (a user's own `vllm serve`, or anything else) as an engine."""

import math
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from evallens.credentials import masked_url
from evallens.service.engines._openai_events import read_event
from evallens.service.engines.base import (
    EngineError,
    EngineFailed,
    EngineOverloaded,
    EngineRejected,
    GenerationChunk,
    JSONValue,
    Message,
    Prompt,
    SamplingOptions,
)
from evallens.service.engines.excerpts import MAX_MASKED_CHARS, safe_excerpt

SSE_DATA = "data: "
SSE_DONE = "[DONE]"
MAX_SHOWN_BODY_CHARS = 500  # of an error status's body
# An upstream's statuses that refuse the request itself (the client's fault: a 400 to the client). Every
# other error status is the engine's or the service's: its credentials (401, 403), the model it asks for
# (404), the upstream at capacity (429) or failing (5xx)
REQUEST_REFUSED = frozenset({400, 413, 422})
CREDENTIALS_REFUSED = frozenset({401, 403})
REFUSED_CREDENTIALS = (
    "refused the service's credentials (EVALLENS_OPENAI_API_KEY, or a user and password in "
    "EVALLENS_OPENAI_BASE_URL)"
)
TOO_MANY_REQUESTS = 429
MAX_RETRY_AFTER_S = 3600  # an upstream's Retry-After passed on is at most an hour
_DELAY_SECONDS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class OpenAIOptions:
    """Where the server is and which of its models to ask."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 600.0


class OpenAIEngine:
    """Streams chat completions from an OpenAI-compatible server over HTTP."""

    provider = "openai"

    def __init__(self, options: OpenAIOptions) -> None:
        self.options = options
        self.model_name = options.model
        self.max_model_len: int | None = None
        self._client: httpx.AsyncClient | None = None
        self._ready = False
        self._open: dict[str, httpx.Response] = {}

    async def start(self) -> None:
        """Open the connection pool and check that the server lists models."""
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.options.api_key}"} if self.options.api_key else {}
            self._client = httpx.AsyncClient(
                base_url=self.options.base_url.rstrip("/"), headers=headers, timeout=self.options.timeout_s
            )
        server = f"OpenAI-compatible server at {masked_url(self.options.base_url)}"
        try:
            response = await self._client.get("/models")
        except httpx.HTTPError as error:
            # from None: the HTTP client's error names the URL as set, with any user and password in it,
            # and the log shows the error a start error is raised from; its words are here, masked
            said = f"{server} unreachable: {_said(error)}"
            raise EngineError(safe_excerpt(said, [], MAX_MASKED_CHARS)) from None
        if not response.is_success:  # it answered: say what, not that it could not be reached
            detail = safe_excerpt(response.text, [], MAX_SHOWN_BODY_CHARS)
            status = response.status_code
            if status in CREDENTIALS_REFUSED:
                raise EngineError(f"{server} {REFUSED_CREDENTIALS}: GET /models answered {status}: {detail}")
            raise EngineError(f"{server} answered {status} to GET /models: {detail}")
        self._ready = True

    async def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client, self._ready = None, False

    def is_ready(self) -> bool:
        """True once the server answered ``GET /models``."""
        return self._ready

    def failure(self) -> str | None:
        """None: a server that fails a request may answer the next one."""
        return None

    def prepare(self, messages: Sequence[Message]) -> Prompt:
        """The server tokenizes: only it knows the prompt length."""
        return Prompt(messages=tuple(messages))

    async def stream(
        self, request_id: str, prompt: Prompt, sampling: SamplingOptions
    ) -> AsyncGenerator[GenerationChunk, None]:
        """Stream the server's SSE chunks; closing the connection early aborts the remote request."""
        if self._client is None:
            raise EngineError("the OpenAI engine is not started")
        body: dict[str, JSONValue] = {
            "model": self.model_name,
            "messages": [{"role": m.role, "content": m.content} for m in prompt.messages],
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "seed": sampling.seed,
            "stop": list(sampling.stop) or None,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if sampling.ignore_eos or sampling.min_tokens:  # vLLM's extensions: sent only when asked for
            body.update(ignore_eos=sampling.ignore_eos, min_tokens=sampling.min_tokens)
        prompt_texts = [message.content for message in prompt.messages]  # no upstream's error may quote
        num_prompt_tokens = num_output_tokens = 0
        finish_reason: str | None = None
        ended = False  # the upstream said the stream is over ([DONE])
        request = self._client.build_request(
            "POST", "/chat/completions", json=body, headers={"X-Request-Id": request_id}
        )
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as error:  # escaped as no engine error: the chat path could not name it
            raise EngineError(f"The engine's server could not be reached: {_said(error)}.") from error
        self._open[request_id] = response
        try:
            if response.status_code >= 400:
                error_body = (await _read_at_most(response, MAX_MASKED_CHARS)).decode(errors="replace")
                detail = safe_excerpt(error_body, prompt_texts, MAX_SHOWN_BODY_CHARS)
                raise _status_error(response, detail)
            async for line in response.aiter_lines():
                ended = ended or line == SSE_DATA + SSE_DONE
                if not line.startswith(SSE_DATA) or line == SSE_DATA + SSE_DONE:
                    continue
                event = read_event(line, line[len(SSE_DATA) :], prompt_texts)
                if event.num_prompt_tokens is not None:
                    num_prompt_tokens = event.num_prompt_tokens
                if event.num_output_tokens is not None:
                    num_output_tokens = event.num_output_tokens
                for text, finish in event.deltas:
                    finish_reason = finish or finish_reason
                    num_output_tokens += 1 if text else 0  # exact count arrives with the usage chunk
                    if text:
                        yield GenerationChunk(text, num_prompt_tokens, num_output_tokens)
            if finish_reason is None and not ended:  # closed mid-answer: a proxy's timeout, a server gone
                raise EngineFailed(
                    "The engine's stream ended with neither a finish reason nor [DONE]: the answer was cut."
                )
            yield GenerationChunk("", num_prompt_tokens, num_output_tokens, finish_reason or "stop")
        except httpx.HTTPError as error:
            raise EngineError(f"The engine's server failed while answering: {_said(error)}.") from error
        finally:
            self._open.pop(request_id, None)
            await response.aclose()

    async def abort(self, request_id: str) -> None:
        """Close the request's connection: servers such as vLLM abort on disconnect."""
        if (response := self._open.pop(request_id, None)) is not None:
            await response.aclose()

    def num_unfinished_requests(self) -> int:
        """Requests with an open connection to the server."""
        return len(self._open)

    def config(self) -> dict[str, JSONValue]:
        """The server and model this engine asks (the server's own settings are not visible). The URL's
        credentials are masked: ``/v1/config`` needs no key, eval runs store it, and other credentials for
        the same server change no answer, so neither does the fingerprint."""
        return {
            "provider": self.provider,
            "model": self.model_name,
            "base_url": masked_url(self.options.base_url),
        }


def _status_error(response: httpx.Response, detail: str) -> EngineError | EngineRejected:
    """The engine error an upstream's error status is: the client's only when it refuses the request."""
    status = response.status_code
    said = f"The engine's server answered {status}: {detail}"
    if status in REQUEST_REFUSED:
        return EngineRejected(said)
    if status in CREDENTIALS_REFUSED:
        return EngineError(f"The engine's server {REFUSED_CREDENTIALS}: it answered {status}: {detail}")
    if status == TOO_MANY_REQUESTS:
        return EngineOverloaded(said, _retry_after_s(response.headers.get("retry-after")))
    return EngineError(said)


def _retry_after_s(value: str | None) -> int | None:
    """A ``Retry-After`` header's delay in whole seconds (RFC 9110 §10.2.3: seconds, or an HTTP date),
    at most ``MAX_RETRY_AFTER_S``; None when there is none or it says neither."""
    if value is None:
        return None
    value = value.strip()
    if _DELAY_SECONDS.fullmatch(value):
        digits = value.lstrip("0") or "0"  # past 4 digits, over the hour (and int() reads at most 4300)
        return MAX_RETRY_AFTER_S if len(digits) > 4 else min(int(digits), MAX_RETRY_AFTER_S)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):  # not a date, or none a datetime holds
        return None
    if when.tzinfo is None:  # "-0000": UTC, as HTTP dates always are
        when = when.replace(tzinfo=UTC)
    delay_s = math.ceil((when - datetime.now(UTC)).total_seconds())
    return min(max(delay_s, 0), MAX_RETRY_AFTER_S)


def _said(error: httpx.HTTPError) -> str:
    """An HTTP client error by its class and words (some, a timeout's, have none)."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


async def _read_at_most(response: httpx.Response, num_bytes: int) -> bytes:
    """The first ``num_bytes`` of the response's body (an error page is read no further)."""
    body = b""
    async for part in response.aiter_bytes():
        body += part
        if len(body) >= num_bytes:
            break
    return body[:num_bytes]
