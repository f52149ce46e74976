"""``POST /v1/feedback``: a rating of one answer, and the receipt."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

# A JSON number, as for chat's numbers: lax parsing took "score": true as a rating of 1 and "0.5" as 0.5,
# a guess recorded as a user's rating. An integer is a number too.
Score = Annotated[float, Strict()]


class FeedbackRequest(BaseModel):
    """``POST /v1/feedback``: a rating of one answer, by its trace id or its response id."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str | None = Field(default=None, description="The answer's trace id (32 hex digits).")
    response_id: str | None = Field(default=None, description="The answer's id (``chatcmpl-...``).")
    score: Score | None = Field(default=None, description="-1 (bad) to 1 (good).")
    thumbs: Literal["up", "down"] | None = Field(default=None, description="Instead of a score: 1 or -1.")
    comment: str | None = Field(default=None, max_length=4000, description="The user's words.")


class FeedbackAccepted(BaseModel):
    """The feedback was recorded (as a span that reaches the collector)."""

    id: str
    trace_id: str
    score: float
