"""Production traces into eval sets: read a trace's question, redact personal data, promote, review.

Functions take the session first and never commit; the caller owns the transaction. Promotion and
review each store a new version of the set; eval runs replay only ``active`` cases.
"""

from evallens.cases._questions import trace_questions
from evallens.cases._redact import RedactedText, Redaction, redact
from evallens.cases.errors import (
    AlreadyPromoted,
    IncompleteCase,
    NotUnderReview,
    RejectWithChanges,
    TraceWithoutQuestion,
    UnknownCase,
    UnknownEvalSet,
    UnknownTrace,
    VersionExists,
)
from evallens.cases.promote import (
    PROMOTED_TAG,
    Expected,
    PromotedCase,
    PromotionReport,
    case_key_for,
    is_complete,
    promote_traces,
)
from evallens.cases.review import CaseReview, ReviewReport, review_cases
from evallens.cases.versions import (
    ACTIVE,
    NEEDS_REVIEW,
    REJECTED,
    case_document,
    latest_eval_set,
    lock_set_versions,
    set_cases,
    set_content_hash,
    version_hash,
)

__all__ = [
    "ACTIVE",
    "NEEDS_REVIEW",
    "PROMOTED_TAG",
    "REJECTED",
    "AlreadyPromoted",
    "CaseReview",
    "Expected",
    "IncompleteCase",
    "NotUnderReview",
    "PromotedCase",
    "PromotionReport",
    "RedactedText",
    "Redaction",
    "RejectWithChanges",
    "ReviewReport",
    "TraceWithoutQuestion",
    "UnknownCase",
    "UnknownEvalSet",
    "UnknownTrace",
    "VersionExists",
    "case_document",
    "case_key_for",
    "is_complete",
    "latest_eval_set",
    "lock_set_versions",
    "promote_traces",
    "redact",
    "review_cases",
    "set_cases",
    "set_content_hash",
    "trace_questions",
    "version_hash",
]
