"""``POST /v1/chat/completions``."""

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from evallens.service.chat.protocol import ChatCompletionRequest, ChatCompletionResponse
from evallens.service.chat.responses import EventStreamResponse, complete, sse_events, trace_headers
from evallens.service.chat.serving import ChatServing
from evallens.service.dependencies import TagsDep, app_state
from evallens.service.errors import ErrorResponse

router = APIRouter()
ChatServingDep = Annotated[ChatServing, Depends(app_state("chat"))]


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
        # Encoded once, by the response model (a dict through json.dumps would encode it twice over).
        return Response(answer.model_dump_json(), media_type="application/json", headers=trace_headers(call))
    # Draw the first chunk before answering, so that queueing and TTFT errors keep their status codes.
    first = await anext(chunks)

    async def close() -> None:
        await chunks.aclose()
        await serving.close(call)

    return EventStreamResponse(sse_events(call, first, chunks), on_close=close, headers=trace_headers(call))
