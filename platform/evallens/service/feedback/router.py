"""``POST /v1/feedback``."""

from typing import Annotated

from fastapi import APIRouter, Depends, status

from evallens.service.dependencies import TagsDep, app_state
from evallens.service.feedback.protocol import FeedbackAccepted, FeedbackRequest
from evallens.service.feedback.serving import FeedbackServing
from evallens.service.openapi import BODY_ERRORS, KEY_ERRORS, error_responses

router = APIRouter()
FeedbackServingDep = Annotated[FeedbackServing, Depends(app_state("feedback"))]
NOT_FOUND = "No answer with that response id, or a trace id another project's answer holds."


@router.post(
    "/v1/feedback",
    status_code=status.HTTP_202_ACCEPTED,
    responses=error_responses(*BODY_ERRORS, *KEY_ERRORS, 404, descriptions={404: NOT_FOUND}),
)
async def create_feedback(
    body: FeedbackRequest, tags: TagsDep, serving: FeedbackServingDep
) -> FeedbackAccepted:
    """Rate an answer by its trace id or response id: score -1..1 or thumbs up/down, and a comment."""
    return serving.record(body, tags)
