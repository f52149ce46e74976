"""Summarise a run's scores per scenario and overall with bootstrap intervals (the metrics score)."""

from collections import defaultdict
from dataclasses import dataclass

from evallens.reports import METRICS, MetricEstimate, RunSummary
from evallens.runs import StoredResult
from evals.stats import bootstrap_ci


@dataclass(frozen=True)
class CaseScores:
    """One case's scores in one run, averaged over repeats; a metric that does not apply is absent."""

    case_key: str
    scenario: str
    scores: dict[str, float]


def average_repeats(rows: list[tuple[str, str, dict[str, float]]]) -> list[CaseScores]:
    """Fold (case key, scenario, scores) rows of several repeats into one ``CaseScores`` per case."""
    totals: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    scenarios: dict[str, str] = {}
    for case_key, scenario, scores in rows:
        scenarios[case_key] = scenario
        for metric, value in scores.items():
            totals[case_key][metric].append(float(value))
    return [
        CaseScores(key, scenarios[key], {m: sum(v) / len(v) for m, v in totals[key].items()})
        for key in sorted(scenarios)
    ]


def summarize(
    cases: list[CaseScores],
    *,
    num_errors: int,
    resamples: int,
    seed: int,
    num_unscored: dict[str, int] | None = None,
) -> RunSummary:
    """Per-metric means with 95% bootstrap intervals, overall and per scenario."""
    by_scenario: dict[str, list[CaseScores]] = defaultdict(list)
    for case in cases:
        by_scenario[case.scenario].append(case)
    return RunSummary(
        overall=_estimates(cases, resamples, seed),
        scenarios={
            name: _estimates(members, resamples, seed) for name, members in sorted(by_scenario.items())
        },
        num_cases=len(cases),
        num_errors=num_errors,
        num_unscored=num_unscored or {},
    )


def _estimates(cases: list[CaseScores], resamples: int, seed: int) -> dict[str, MetricEstimate]:
    estimates: dict[str, MetricEstimate] = {}
    for metric in METRICS:
        values = [case.scores[metric] for case in cases if metric in case.scores]
        if not values:
            continue
        low, high = bootstrap_ci(values, resamples=resamples, seed=seed)
        estimates[metric] = MetricEstimate(
            mean=sum(values) / len(values), ci_low=low, ci_high=high, n=len(values)
        )
    return estimates


def case_scores(results: list[StoredResult]) -> list[CaseScores]:
    """Per-case scores of a stored run, averaged over repeats."""
    return average_repeats([(r.case.case_key, r.case.scenario, dict(r.result.scores)) for r in results])
