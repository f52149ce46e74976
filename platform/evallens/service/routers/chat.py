"""``POST /v1/chat/completions``."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from evallens.service.protocol import ChatCompletionRequest, ChatCompletionResponse, ErrorResponse
from evallens.service.responses import EventStreamResponse, complete, sse_events, trace_headers
from evallens.service.routers._deps import ChatServingDep, TagsDep

router = APIRouter()


@router.post(
    "/v1/chat/completions",
    response_model=ChatCompletionResponse,
    responses={
        400: {"model": ErrorResponse},
        401: {"model": ErrorResponse},
        429: {"model": ErrorResponse},
        503: {"model": ErrorResponse},
        504: {"model": ErrorResponse},
    },
)
async def create_chat_completion(
    body: ChatCompletionRequest, tags: TagsDep, serving: ChatServingDep
) -> Response:
    """A chat completion, as one JSON answer or (``stream``) as server-sent events."""
    call = await serving.prepare(body, tags)
    chunks = serving.run(call)
    if not body.stream:
        answer = await complete(call, chunks)
        return JSONResponse(answer.model_dump(), headers=trace_headers(call))
    # Draw the first chunk before answering, so that queueing and TTFT errors keep their status codes.
    first = await anext(chunks)

    async def close() -> None:
        await chunks.aclose()
        await serving.close(call)

    return EventStreamResponse(sse_events(call, first, chunks), on_close=close, headers=trace_headers(call))
