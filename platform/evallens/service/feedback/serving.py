"""Feedback: a rating of one answer, recorded as a span that reaches the collector.

The span carries ``evallens.feedback.trace_id``, ``evallens.feedback.score`` (a number in -1..1) and
``evallens.feedback.comment`` (names in ``evallens.telemetry.attributes``): exactly what case mining
joins on, and what any other service can emit itself (docs/feedback.md).
"""

import math
import re
import uuid

from opentelemetry.trace import SpanKind, Tracer

from evallens.service.errors import BadRequest, NotFound
from evallens.service.feedback.protocol import FeedbackAccepted, FeedbackRequest
from evallens.service.response_index import ResponseIndex
from evallens.service.tags import RequestTags
from evallens.telemetry import attributes as attr

TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
RESPONSE_ID = re.compile(r"^chatcmpl-[0-9a-f]{32}$")
THUMBS = {"up": 1.0, "down": -1.0}


def feedback_score(body: FeedbackRequest) -> float:
    """The score in -1..1 from ``score`` or ``thumbs`` (exactly one of them)."""
    if (body.score is None) == (body.thumbs is None):
        raise BadRequest("give exactly one of `score` (-1 to 1) and `thumbs` (up or down)", code="bad_score")
    if body.thumbs is not None:
        return THUMBS[body.thumbs]
    assert body.score is not None
    if not math.isfinite(body.score) or not -1.0 <= body.score <= 1.0:
        raise BadRequest(f"`score` must be between -1 and 1, got {body.score}", code="bad_score")
    return float(body.score)


class FeedbackServing:
    """Validates feedback and records it as a ``feedback`` span."""

    def __init__(self, tracer: Tracer, responses: ResponseIndex) -> None:
        self.tracer = tracer
        self.responses = responses

    def target_trace(self, body: FeedbackRequest, project: str | None = None) -> str:
        """The trace id the feedback is about: given, or looked up by response id; with auth, never an
        answer this process gave another project (404, as for an answer it does not know)."""
        if (body.trace_id is None) == (body.response_id is None):
            raise BadRequest("give exactly one of `trace_id` and `response_id`", code="bad_target")
        if body.trace_id is not None:
            trace_id = body.trace_id.strip().lower()
            if not TRACE_ID.match(trace_id):
                raise BadRequest("`trace_id` must be 32 hexadecimal digits", code="bad_trace_id")
            if self.responses.answered_elsewhere(trace_id, project):
                raise NotFound(f"unknown trace id {trace_id} for this API key's project")
            return trace_id
        assert body.response_id is not None
        if not RESPONSE_ID.match(body.response_id):
            raise BadRequest("`response_id` must look like chatcmpl-<32 hex digits>", code="bad_response_id")
        found = self.responses.trace_of(body.response_id, project)
        if found is None:
            raise NotFound(
                f"unknown response id {body.response_id}: send its `trace_id` (the x-trace-id header)"
            )
        return found

    def record(self, body: FeedbackRequest, tags: RequestTags) -> FeedbackAccepted:
        """Record the feedback span; 400 for a bad score or id, 404 for an unknown response id."""
        score = feedback_score(body)
        trace_id = self.target_trace(body, tags.project)
        feedback_id = f"feedback-{uuid.uuid4().hex}"
        span = self.tracer.start_span(attr.SPAN_FEEDBACK, kind=SpanKind.SERVER)
        span.set_attributes(
            {
                attr.FEEDBACK_TARGET_TRACE_ID: trace_id,
                attr.FEEDBACK_SCORE: score,
                attr.FEEDBACK_ID: feedback_id,
                **tags.span_attributes(),
            }
        )
        if body.comment:
            span.set_attribute(attr.FEEDBACK_COMMENT, body.comment)
        span.end()
        return FeedbackAccepted(id=feedback_id, trace_id=trace_id, score=score)
