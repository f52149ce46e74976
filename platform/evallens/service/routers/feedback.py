"""``POST /v1/feedback``."""

from fastapi import APIRouter, status

from evallens.service.protocol import ErrorResponse, FeedbackAccepted, FeedbackRequest
from evallens.service.routers._deps import FeedbackServingDep, TagsDep

router = APIRouter()


@router.post(
    "/v1/feedback",
    status_code=status.HTTP_202_ACCEPTED,
    responses={400: {"model": ErrorResponse}, 401: {"model": ErrorResponse}, 404: {"model": ErrorResponse}},
)
async def create_feedback(
    body: FeedbackRequest, tags: TagsDep, serving: FeedbackServingDep
) -> FeedbackAccepted:
    """Rate an answer by its trace id or response id: score -1..1 or thumbs up/down, and a comment."""
    return serving.record(body, tags)
