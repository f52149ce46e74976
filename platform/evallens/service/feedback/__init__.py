"""``POST /v1/feedback``: a rating of one answer, recorded as a span (protocol, serving, router)."""

from evallens.service.feedback.router import router
from evallens.service.feedback.serving import FeedbackServing

__all__ = ["FeedbackServing", "router"]
