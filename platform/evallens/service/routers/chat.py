"""``POST /v1/chat/completions``."""

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from evallens.service._recording import RequestTags
from evallens.service.protocol import ChatCompletionRequest, ChatCompletionResponse, ErrorResponse
from evallens.service.responses import EventStreamResponse, complete, sse_events
from evallens.service.routers._deps import ChatServingDep

router = APIRouter()


@router.post(
    "/v1/chat/completions",
    response_model=ChatCompletionResponse,
    responses={400: {"model": ErrorResponse}, 429: {"model": ErrorResponse}, 504: {"model": ErrorResponse}},
)
async def create_chat_completion(
    body: ChatCompletionRequest, request: Request, serving: ChatServingDep
) -> Response:
    """A chat completion, as one JSON answer or (``stream``) as server-sent events."""
    call = serving.prepare(body, RequestTags.from_headers(request.headers))
    chunks = serving.run(call)
    if not body.stream:
        return JSONResponse((await complete(call, chunks)).model_dump())
    # Draw the first chunk before answering, so that queueing and TTFT errors keep their status codes.
    first = await anext(chunks)

    async def close() -> None:
        await chunks.aclose()
        await serving.close(call)

    return EventStreamResponse(sse_events(call, first, chunks), on_close=close)
