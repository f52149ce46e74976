"""A stored run's results read back with their cases, for comparisons and flipped-case reports."""

import uuid
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens.db.models import EvalCase, EvalResult, EvalRun, EvalSet


@dataclass(frozen=True)
class StoredResult:
    """One stored result row with its case."""

    case: EvalCase
    result: EvalResult


def load_results(session: Session, run_id: uuid.UUID) -> list[StoredResult]:
    """Every result of a run with its case, first repeat first; only cases of the run's own project (a
    result references its case by id alone: a row written by hand could name another project's)."""
    query = (
        select(EvalCase, EvalResult)
        .join(EvalResult, EvalResult.case_id == EvalCase.id)
        .join(EvalRun, EvalRun.id == EvalResult.run_id)
        .join(EvalSet, EvalSet.id == EvalCase.eval_set_id)
        .where(EvalResult.run_id == run_id, EvalSet.project == EvalRun.project)
        .order_by(EvalCase.case_key, EvalResult.repeat)
    )
    return [StoredResult(case=case, result=result) for case, result in session.execute(query)]


# What a case asks and what its answer is judged against. A case edited between two versions of its set
# (another reference, other required facts, reworded) is another question under the same key.
CASE_CONTENT = (
    "scenario",
    "question",
    "messages",
    "reference_answer",
    "required_facts",
    "reference_context_ids",
    "expected_behavior",
)


def edited_cases(baseline: list[StoredResult], candidate: list[StoredResult]) -> list[str]:
    """The keys, sorted, of the cases both runs asked whose content differs (the runs replayed two
    versions of the set, and the case was edited between them): their answers are not a pair."""
    asked = {item.case.case_key: _content(item.case) for item in baseline}
    return sorted(
        {
            item.case.case_key
            for item in candidate
            if item.case.case_key in asked and asked[item.case.case_key] != _content(item.case)
        }
    )


def _content(case: EvalCase) -> tuple[object, ...]:
    return tuple(getattr(case, name) for name in CASE_CONTENT)
