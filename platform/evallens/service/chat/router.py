"""``POST /v1/chat/completions``."""

import asyncio
from collections.abc import Awaitable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from evallens.service.chat.protocol import ChatCompletionRequest, ChatCompletionResponse
from evallens.service.chat.recording import CLIENT_CLOSED
from evallens.service.chat.responses import EventStreamResponse, complete, sse_events, trace_headers
from evallens.service.chat.serving import ChatServing
from evallens.service.dependencies import TagsDep, app_state
from evallens.service.errors import ServiceError
from evallens.service.openapi import BODY_ERRORS, KEY_ERRORS, error_responses

T = TypeVar("T")
router = APIRouter()
ChatServingDep = Annotated[ChatServing, Depends(app_state("chat"))]
STREAM_SCHEMA = {
    "type": "string",
    "description": "Server-sent events: each `data:` a chat.completion.chunk JSON object (an error body "
    "if the answer fails part way), then `data: [DONE]`.",
}
CLIENT_GONE = (
    "The client closed the connection before its answer (not `stream`) was ready, nginx's convention: "
    "sent with no body, to no one; the status the request's span, metrics and log record."
)


@router.post(
    "/v1/chat/completions",
    response_model=ChatCompletionResponse,
    responses={
        200: {
            "description": "The answer: one JSON object, or with `stream` server-sent events.",
            "content": {"text/event-stream": {"schema": STREAM_SCHEMA}},
        },
        CLIENT_CLOSED: {"description": CLIENT_GONE},
        **error_responses(*BODY_ERRORS, *KEY_ERRORS, 500, 502, 503, 504),  # 503: the engine's too
    },
)
async def create_chat_completion(
    body: ChatCompletionRequest, tags: TagsDep, serving: ChatServingDep, request: Request
) -> Response:
    """A chat completion, as one JSON answer or (``stream``) as server-sent events."""
    call = await serving.prepare(body, tags)
    chunks = serving.run(call)
    if not body.stream:
        try:
            answer = await until_disconnected(request, complete(call, chunks))
        except ClientGone:
            return Response(status_code=CLIENT_CLOSED)  # nobody reads it: the client is gone
        # Encoded once, by the response model (a dict through json.dumps would encode it twice over).
        return Response(answer.model_dump_json(), media_type="application/json", headers=trace_headers(call))
    # Draw the first chunk before answering, so that queueing and TTFT errors keep their status codes.
    first = await anext(chunks)

    async def close(stalled: ServiceError | None) -> None:
        if stalled is not None:  # recorded first: closing the generation records a client gone
            serving.fail(call.recording, stalled)
        await chunks.aclose()
        await serving.close(call)

    events = sse_events(call, first, chunks)
    return EventStreamResponse(events, on_close=close, deadline=call.deadline, headers=trace_headers(call))


class ClientGone(Exception):
    """The client disconnected before its answer was ready."""


async def until_disconnected(request: Request, work: Awaitable[T]) -> T:
    """``work``, cancelled when the client disconnects first: nothing else ends a whole answer's
    generation (and frees its slot) for a client that left, as the end of an event stream does."""
    task = asyncio.ensure_future(work)

    async def watch() -> bool:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        return task.cancel()

    watcher = asyncio.create_task(watch())
    try:
        return await task
    except asyncio.CancelledError:
        if watcher.done() and not watcher.cancelled() and watcher.result():
            raise ClientGone from None
        raise
    finally:
        watcher.cancel()
