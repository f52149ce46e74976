"""``POST /v1/feedback``."""

from typing import Annotated

from fastapi import APIRouter, Depends, status

from evallens.service.dependencies import TagsDep, app_state
from evallens.service.errors import ErrorResponse
from evallens.service.feedback.protocol import FeedbackAccepted, FeedbackRequest
from evallens.service.feedback.serving import FeedbackServing

router = APIRouter()
FeedbackServingDep = Annotated[FeedbackServing, Depends(app_state("feedback"))]


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
