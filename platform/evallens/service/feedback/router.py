"""``POST /v1/feedback``."""

from typing import Annotated

from fastapi import APIRouter, Depends, Request, status

from evallens.service.dependencies import TagsDep
from evallens.service.errors import ErrorResponse
from evallens.service.feedback.protocol import FeedbackAccepted, FeedbackRequest
from evallens.service.feedback.serving import FeedbackServing

router = APIRouter()


def feedback_serving(request: Request) -> FeedbackServing:
    """The app's feedback serving."""
    serving: FeedbackServing = request.app.state.feedback
    return serving


FeedbackServingDep = Annotated[FeedbackServing, Depends(feedback_serving)]


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
