"""OpenAI response bodies from engine chunks: one JSON answer, or server-sent events."""

import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from evallens.service.budgets import Deadline, within
from evallens.service.chat.protocol import (
    CacheFlags,
    ChatChoice,
    ChatCompletionChunk,
    ChatCompletionResponse,
    ChatMessage,
    ChunkChoice,
    DeltaMessage,
    EvallensExtension,
    Usage,
)
from evallens.service.chat.serving import ChatCall
from evallens.service.engines.base import GenerationChunk
from evallens.service.errors import BudgetExceeded, ErrorDetail, ErrorResponse, ServiceError
from evallens.telemetry import attributes as attr

SSE_DONE = "data: [DONE]\n\n"


def extension(call: ChatCall) -> EvallensExtension:
    """evallens' fields of a response."""
    recording = call.recording
    state = call.preflight
    return EvallensExtension(
        cited_ids=list(call.sources.cited_ids),
        retrieved_ids=list(call.sources.retrieved_ids),
        cache=CacheFlags(exact=state.exact_hit, semantic=state.semantic_hit),
        degraded=state.degraded,
        degraded_reason=state.degraded_reason,
        route=recording.route,
        trace_id=recording.trace_id,
        config_fingerprint=call.fingerprint,
    )


def trace_headers(call: ChatCall) -> dict[str, str]:
    """``x-trace-id``: where the request's spans are (the eval runner reads it)."""
    return {attr.HEADER_TRACE_ID: call.recording.trace_id}


def usage(call: ChatCall) -> Usage:
    """Token usage so far."""
    recording = call.recording
    total = recording.num_prompt_tokens + recording.num_output_tokens
    return Usage(
        prompt_tokens=recording.num_prompt_tokens,
        completion_tokens=recording.num_output_tokens,
        total_tokens=total,
    )


async def complete(call: ChatCall, chunks: AsyncIterator[GenerationChunk]) -> ChatCompletionResponse:
    """Run the request to the end and answer in one ``chat.completion``."""
    text = "".join([chunk.text async for chunk in chunks])
    recording = call.recording
    choice = ChatChoice(
        message=ChatMessage(role="assistant", content=text), finish_reason=recording.finish_reason
    )
    return ChatCompletionResponse(
        id=recording.request_id,
        model=recording.model,
        choices=[choice],
        usage=usage(call),
        evallens=extension(call),
    )


def _event(payload: ChatCompletionChunk | ErrorResponse) -> str:
    return f"data: {payload.model_dump_json(exclude_none=True)}\n\n"


class ChunkEvents:
    """One stream's ``chat.completion.chunk`` events. A text delta, the bulk of a stream, is the same
    JSON every time but for its text: the fixed part is encoded once and only the text per token."""

    def __init__(self, request_id: str, model: str) -> None:
        self.request_id, self.model = request_id, model
        self.created = int(time.time())  # one stream, one creation time (as OpenAI's chunks carry)
        fixed = self.chunk([]).model_dump_json(exclude_none=True)
        self._head = f'data: {fixed[:-2]}{{"index":0,"delta":{{"content":'  # up to '"choices":['
        self._tail = "}}]}\n\n"

    def chunk(self, choices: list[ChunkChoice], **fields: Any) -> ChatCompletionChunk:
        """A chunk of this stream."""
        return ChatCompletionChunk(
            id=self.request_id, model=self.model, created=self.created, choices=choices, **fields
        )

    def text(self, text: str) -> str:
        """The event of a text delta without a role, a finish reason or evallens' fields."""
        return f"{self._head}{json.dumps(text, ensure_ascii=False)}{self._tail}"

    def event(self, choices: list[ChunkChoice], **fields: Any) -> str:
        """Any other event, through the response model."""
        return _event(self.chunk(choices, **fields))


async def sse_events(
    call: ChatCall, first: GenerationChunk, chunks: AsyncIterator[GenerationChunk]
) -> AsyncGenerator[str, None]:
    """``chat.completion.chunk`` events (the first one already drawn), a usage chunk if asked, ``[DONE]``."""
    recording = call.recording
    options = call.request.stream_options
    include_usage = options is not None and options.include_usage
    events = ChunkEvents(recording.request_id, recording.model)

    def chunk_event(chunk: GenerationChunk, role: bool) -> str:
        if not role and chunk.finish_reason is None:
            return events.text(chunk.text)
        delta = DeltaMessage(role="assistant" if role else None, content=chunk.text)
        choice = ChunkChoice(delta=delta, finish_reason=chunk.finish_reason)
        last = chunk.finish_reason is not None
        return events.event([choice], evallens=extension(call) if last else None)

    yield chunk_event(first, role=True)
    try:
        async for chunk in chunks:
            if chunk.text or chunk.finish_reason is not None:
                yield chunk_event(chunk, role=False)
    except ServiceError as error:  # too late for a status code: say it in the stream, as vLLM does
        yield _event(
            ErrorResponse(error=ErrorDetail(message=error.message, type=error.error_type, code=error.code))
        )
        yield SSE_DONE
        return
    if include_usage:
        yield events.event([], usage=usage(call), evallens=extension(call))
    yield SSE_DONE


class EventStreamResponse(StreamingResponse):
    """Server-sent events that close the generation when the response ends for any reason.

    Starlette stops iterating when the client disconnects but leaves the iterator open; closing it
    here, outside the cancelled scope, is what reliably aborts the engine request. A client that stops
    reading keeps its connection open and the server's send waiting on it: the response ends when
    ``deadline`` (the request's total budget) passes while a send waits, and ``on_close`` gets the 504.
    """

    def __init__(
        self,
        events: AsyncGenerator[str, None],
        on_close: Callable[[ServiceError | None], Awaitable[None]],
        deadline: Deadline,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(
            events, media_type="text/event-stream", headers={"Cache-Control": "no-cache", **(headers or {})}
        )
        self._events = events
        self._on_close = on_close
        self._deadline = deadline

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_in_time(message: Message) -> None:
            # uvicorn's send waits for as long as the client's socket is full: with no bound, a client
            # that stopped reading held the request's in-flight slot for as long as it kept the socket
            deadline = self._deadline
            try:
                await within(send(message), deadline.total_left_s(), deadline.total_error())
            except BudgetExceeded as error:
                raise _ClientStalled(error) from None

        stalled: ServiceError | None = None
        try:
            await super().__call__(scope, receive, send_in_time)
        except _ClientStalled as error:
            stalled = error.budget_exceeded  # uvicorn closes the connection of a response left unfinished
        finally:
            await self._events.aclose()
            await self._on_close(stalled)


class _ClientStalled(Exception):
    """The client stopped reading the stream: a send still waited when the request's total budget ran out."""

    def __init__(self, budget_exceeded: BudgetExceeded) -> None:
        super().__init__(str(budget_exceeded))
        self.budget_exceeded = budget_exceeded


__all__ = ["ChunkEvents", "EventStreamResponse", "complete", "sse_events", "trace_headers"]
