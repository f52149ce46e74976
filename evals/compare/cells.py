"""Per scenario x metric paired tests between two runs, Holm-corrected across the family."""

from collections import defaultdict
from dataclasses import dataclass

from evallens.reports import LOWER_IS_BETTER, METRICS, MetricComparison
from evals.scoring import CaseScores
from evals.stats import holm, mcnemar_exact, paired_bootstrap

OVERALL = "overall"


@dataclass(frozen=True)
class ComparisonOptions:
    """How strict the comparison is."""

    min_effect: float = 0.03
    alpha: float = 0.05
    resamples: int = 2000
    seed: int = 0


def compare_cells(
    baseline: list[CaseScores], candidate: list[CaseScores], options: ComparisonOptions
) -> list[MetricComparison]:
    """One comparison per (scenario or overall) x metric over the cases both runs scored."""
    paired = _pairs(baseline, candidate)
    raw = [
        cell
        for scenario, pairs in paired.items()
        for metric in METRICS
        if (cell := _test(scenario, metric, pairs.get(metric, []), options)) is not None
    ]
    adjusted = holm([cell.p_value for cell in raw])
    for cell, p_adjusted in zip(raw, adjusted, strict=True):
        cell.p_adjusted = p_adjusted
        cell.significant = p_adjusted < options.alpha
        cell.regression = cell.significant and worse_by(cell.metric, cell.delta) >= options.min_effect
    return raw


def worse_by(metric: str, delta: float) -> float:
    """How much worse the candidate is, in rate units (negative when it is better)."""
    return delta if metric in LOWER_IS_BETTER else -delta


def _pairs(
    baseline: list[CaseScores], candidate: list[CaseScores]
) -> dict[str, dict[str, list[tuple[float, float]]]]:
    by_key = {case.case_key: case for case in candidate}
    paired: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for base in baseline:
        cand = by_key.get(base.case_key)
        if cand is None:
            continue
        for metric, value in base.scores.items():
            if metric in cand.scores:
                pair = (value, cand.scores[metric])
                paired[OVERALL][metric].append(pair)
                paired[base.scenario][metric].append(pair)
    return dict(sorted(paired.items(), key=lambda item: (item[0] != OVERALL, item[0])))


def _test(
    scenario: str, metric: str, pairs: list[tuple[float, float]], options: ComparisonOptions
) -> MetricComparison | None:
    if not pairs:
        return None
    base = [b for b, _ in pairs]
    cand = [c for _, c in pairs]
    binary = all(value in (0.0, 1.0) for value in base + cand)
    if binary:
        p_value = mcnemar_exact([b == 1.0 for b in base], [c == 1.0 for c in cand])
    else:
        p_value = paired_bootstrap(base, cand, resamples=options.resamples, seed=options.seed)
    baseline_mean, candidate_mean = sum(base) / len(base), sum(cand) / len(cand)
    return MetricComparison(
        scenario=scenario,
        metric=metric,
        baseline=baseline_mean,
        candidate=candidate_mean,
        delta=candidate_mean - baseline_mean,
        num_pairs=len(pairs),
        test="mcnemar" if binary else "paired_bootstrap",
        p_value=p_value,
        p_adjusted=p_value,
        significant=False,
        regression=False,
    )
