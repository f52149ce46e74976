"""A stored run's results read back with their cases, for comparisons and flipped-case reports."""

import uuid
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens.db.models import EvalCase, EvalResult


@dataclass(frozen=True)
class StoredResult:
    """One stored result row with its case."""

    case: EvalCase
    result: EvalResult


def load_results(session: Session, run_id: uuid.UUID) -> list[StoredResult]:
    """Every result of a run with its case, first repeat first."""
    query = (
        select(EvalCase, EvalResult)
        .join(EvalResult, EvalResult.case_id == EvalCase.id)
        .where(EvalResult.run_id == run_id)
        .order_by(EvalCase.case_key, EvalResult.repeat)
    )
    return [StoredResult(case=case, result=result) for case, result in session.execute(query)]
