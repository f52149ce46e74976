"""Review promoted cases: complete them (or reject them) in a new version of the set."""

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from evallens.cases._redact import redact
from evallens.cases.errors import (
    IncompleteCase,
    NotUnderReview,
    RejectWithChanges,
    UnknownCase,
    refuse_nul,
)
from evallens.cases.promote import Expected, is_complete
from evallens.cases.versions import (
    ACTIVE,
    NEEDS_REVIEW,
    REJECTED,
    copy_case,
    latest_eval_set,
    lock_set_versions,
    set_cases,
    store_version,
)
from evallens.db.models import EvalCase
from evallens.errors import refuse_blank


@dataclass(frozen=True)
class CaseReview:
    """What a reviewer decided for the cases: the missing fields, or rejection."""

    reference_answer: str | None = None
    expected: Expected | None = None
    required_facts: Sequence[str] = ()
    reference_context_ids: Sequence[str] = ()
    question: str | None = None
    scenario: str | None = None
    reject: bool = False


@dataclass(frozen=True)
class ReviewReport:
    """The new set version and the status each reviewed case has in it."""

    eval_set_name: str
    version: int
    eval_set_id: int
    statuses: dict[str, str] = field(default_factory=dict)


def review_cases(
    session: Session,
    case_keys: Sequence[str],
    review: CaseReview,
    *,
    eval_set_name: str,
    project: str = "default",
) -> ReviewReport:
    """Store a new version in which the ``needs_review`` cases ``case_keys`` are active (or rejected)."""
    refuse_nul(
        {
            "reference answer": review.reference_answer,
            "required facts": review.required_facts,
            "reference context ids": review.reference_context_ids,
            "question": review.question,
            "scenario": review.scenario,
        }
    )
    # blanks are never what a reviewer meant (no answer states an empty fact: every answer misses it)
    refuse_blank({"question": review.question, "scenario": review.scenario})
    for fact in review.required_facts:
        refuse_blank({"required fact": fact})
    for context_id in review.reference_context_ids:
        refuse_blank({"reference context id": context_id})
    _refuse_rejecting_with_changes(review)
    lock_set_versions(session, eval_set_name, project)
    source = latest_eval_set(session, eval_set_name, project)
    cases = {case.case_key: case for case in set_cases(session, source.id)}
    keys = list(dict.fromkeys(case_keys))
    if not keys:
        raise UnknownCase("no case keys given")
    for key in keys:
        if key not in cases:
            raise UnknownCase(f"no case {key!r} in {source.name} v{source.version}")
        if cases[key].status != NEEDS_REVIEW:
            raise NotUnderReview(f"case {key!r} of {source.name} v{source.version} is {cases[key].status}")
    rows = [_reviewed(case, review) if key in keys else copy_case(case) for key, case in cases.items()]
    target = store_version(session, source, rows)
    return ReviewReport(
        source.name,
        target.version,
        target.id,
        {row.case_key: row.status for row in rows if row.case_key in keys},
    )


def _refuse_rejecting_with_changes(review: CaseReview) -> None:
    """``RejectWithChanges`` when a rejection also carries content: a rejected case keeps none of it, so
    the reviewer meant one or the other (a reference given with ``--reject`` was silently dropped)."""
    if not review.reject:
        return
    given = {
        "reference answer": review.reference_answer is not None,
        "expected behaviour": review.expected is not None,
        "required facts": bool(review.required_facts),
        "reference context ids": bool(review.reference_context_ids),
        "question": review.question is not None,
        "scenario": review.scenario is not None,
    }
    named = [name for name, is_given in given.items() if is_given]
    if named:
        raise RejectWithChanges(
            f"a rejected case keeps no {', '.join(named)}: reject the case, or complete it, not both"
        )


def _reviewed(case: EvalCase, review: CaseReview) -> EvalCase:
    if review.reject:
        return copy_case(case, status=REJECTED)
    changes: dict[str, object] = {"status": ACTIVE}
    if review.reference_answer is not None:
        changes["reference_answer"] = review.reference_answer.strip() or None
    if review.expected is not None:
        changes["expected_behavior"] = review.expected
    if review.required_facts:
        changes["required_facts"] = list(review.required_facts)
    if review.reference_context_ids:
        changes["reference_context_ids"] = list(review.reference_context_ids)
    if review.scenario:
        changes["scenario"] = review.scenario
    if review.question:
        redacted = redact(review.question)
        changes["question"] = redacted.text
        changes["redactions"] = [vars(redaction) for redaction in redacted.redactions]
    reviewed = copy_case(case, **changes)
    if not is_complete(reviewed.expected_behavior, reviewed.reference_answer):
        raise IncompleteCase(
            f"case {case.case_key!r} still has no reference answer: "
            "pass --reference, or --expected decline|refuse"
        )
    return reviewed
