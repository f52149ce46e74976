"""Promote production traces into a new version of an eval set, redacted and linked to their trace."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens.cases._questions import trace_questions
from evallens.cases._redact import RedactedText, redact
from evallens.cases.errors import (
    AlreadyPromoted,
    TraceWithoutQuestion,
    UnknownTrace,
    refuse_nul,
)
from evallens.cases.versions import (
    ACTIVE,
    NEEDS_REVIEW,
    copy_case,
    latest_eval_set,
    lock_set_versions,
    set_cases,
    store_version,
)
from evallens.db.models import EvalCase, EvalSet, Span
from evallens.errors import refuse_blank

Expected = Literal["answer", "decline", "refuse"]
PROMOTED_TAG = "promoted"


@dataclass(frozen=True)
class PromotedCase:
    """One case created from a trace."""

    case_key: str
    trace_id: str
    question: RedactedText
    status: str = NEEDS_REVIEW


@dataclass(frozen=True)
class PromotionReport:
    """The new set version and the cases promoted into it."""

    eval_set_name: str
    version: int
    eval_set_id: int
    cases: list[PromotedCase] = field(default_factory=list)


def is_complete(expected: str, reference_answer: str | None) -> bool:
    """A case is complete when a set file would accept it: ``decline``/``refuse``, or an answer with a
    reference answer. Complete cases are ``active`` at once; others wait as ``needs_review``."""
    return expected != "answer" or bool(reference_answer and reference_answer.strip())


def case_key_for(trace_id: str) -> str:
    """The case key a promoted trace gets."""
    return f"prod-{trace_id}"


def promote_traces(
    session: Session,
    trace_ids: Sequence[str],
    *,
    eval_set_name: str,
    scenario: str,
    expected: Expected = "answer",
    reference_answer: str | None = None,
    project: str = "default",
) -> PromotionReport:
    """Store a new version of the set: its cases plus one redacted case per trace (nothing on error)."""
    for trace_id in trace_ids:  # a blank id (an empty shell variable) read "no trace with id " before
        refuse_blank({"trace id": trace_id})
    # stored in lower-case hex: an id pasted from a viewer that shows capitals, or with spaces, is the same
    unique_ids = list(dict.fromkeys(trace_id.strip().lower() for trace_id in trace_ids))
    if not unique_ids:
        raise UnknownTrace("no trace ids given")
    refuse_blank({"scenario": scenario})
    refuse_nul({"scenario": scenario, "reference answer": reference_answer})
    lock_set_versions(session, eval_set_name, project)
    source = latest_eval_set(session, eval_set_name, project)
    existing = set_cases(session, source.id)
    questions = _checked_questions(session, unique_ids, source, existing, project)
    status = ACTIVE if is_complete(expected, reference_answer) else NEEDS_REVIEW
    promoted = [
        PromotedCase(case_key_for(trace_id), trace_id, redact(question), status)
        for trace_id, question in questions.items()
    ]
    new_rows = [
        EvalCase(
            case_key=case.case_key,
            scenario=scenario,
            question=case.question.text,
            messages=None,
            reference_answer=(reference_answer or "").strip() or None,  # a blank text area is no reference
            required_facts=[],
            reference_context_ids=[],
            expected_behavior=expected,
            tags=[PROMOTED_TAG],
            status=status,
            source_trace_id=case.trace_id,
            redactions=[vars(redaction) for redaction in case.question.redactions],
        )
        for case in promoted
    ]
    target = store_version(session, source, [copy_case(case) for case in existing] + new_rows)
    return PromotionReport(eval_set_name, target.version, target.id, promoted)


def _checked_questions(
    session: Session, trace_ids: list[str], source: EvalSet, existing: list[EvalCase], project: str
) -> dict[str, str]:
    eval_runs = dict(
        session.execute(
            select(Span.trace_id, Span.eval_run_id)
            .where(Span.trace_id.in_(trace_ids), Span.project == project)
            .order_by(Span.eval_run_id.nulls_first())  # an eval span, if any, comes last and wins
        ).all()
    )
    promoted = {case.source_trace_id for case in existing} | {case.case_key for case in existing}
    for trace_id in trace_ids:
        if trace_id not in eval_runs:
            raise UnknownTrace(f"no trace with id {trace_id}")
        if eval_runs[trace_id] is not None:
            raise UnknownTrace(
                f"trace {trace_id} is eval traffic (run {eval_runs[trace_id]}), not production"
            )
        if trace_id in promoted or case_key_for(trace_id) in promoted:
            raise AlreadyPromoted(f"trace {trace_id} is already a case of {source.name} v{source.version}")
    questions = trace_questions(session, trace_ids, project)
    checked: dict[str, str] = {}
    for trace_id in trace_ids:
        question = questions.get(trace_id)
        if not question:
            raise TraceWithoutQuestion(f"trace {trace_id} carries no user question to promote")
        checked[trace_id] = question
    return checked
