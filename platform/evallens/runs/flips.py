"""Cases that got worse on a metric between two runs, with both answers and traces side by side."""

from evallens.reports import LOWER_IS_BETTER, FlippedCase
from evallens.runs.results import StoredResult, edited_cases
from evallens.telemetry.messages import last_user_message

MAX_FLIPS = 100


def flipped_cases(baseline: list[StoredResult], candidate: list[StoredResult]) -> list[FlippedCase]:
    """Per case and metric: the baseline scored better than the candidate (first repeat of each); not
    a case edited between the runs' set versions, whose two answers were asked or judged otherwise."""
    edited = set(edited_cases(baseline, candidate))
    base_by_key = {key: item for key, item in _first_repeat(baseline).items() if key not in edited}
    flips: list[FlippedCase] = []
    for key, cand in sorted(_first_repeat(candidate).items()):
        base = base_by_key.get(key)
        if base is None:
            continue
        for metric, cand_score in sorted(cand.result.scores.items()):
            base_score = base.result.scores.get(metric)
            if base_score is None or not _worse(metric, base_score, cand_score):
                continue
            flips.append(_flip(metric, base, cand))
            if len(flips) >= MAX_FLIPS:
                return flips
    return flips


def _first_repeat(results: list[StoredResult]) -> dict[str, StoredResult]:
    first: dict[str, StoredResult] = {}
    for item in results:
        first.setdefault(item.case.case_key, item)
    return first


def _worse(metric: str, baseline: float, candidate: float) -> bool:
    return candidate > baseline if metric in LOWER_IS_BETTER else candidate < baseline


def _flip(metric: str, base: StoredResult, cand: StoredResult) -> FlippedCase:
    return FlippedCase(
        case_key=cand.case.case_key,
        scenario=cand.case.scenario,
        metric=metric,
        question=cand.case.question or last_user_message(cand.case.messages or []),
        reference_answer=cand.case.reference_answer,
        baseline_response=base.result.response,
        candidate_response=cand.result.response,
        baseline_retrieved_ids=[str(i) for i in base.result.retrieved_ids],
        candidate_retrieved_ids=[str(i) for i in cand.result.retrieved_ids],
        baseline_trace_id=base.result.trace_id,
        candidate_trace_id=cand.result.trace_id,
    )
