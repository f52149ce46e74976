"""Per scenario x metric paired tests between two runs, adjusted by the gate's hierarchical procedure."""

from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evallens.reports import GRADED_METRICS, LOWER_IS_BETTER, METRICS, MetricComparison
from evals.compare.power import PowerInputs, cell_power
from evals.compare.procedure import POOLED_SHARE, adjust_overall, adjust_scenarios, union_p
from evals.scoring import CaseScores
from evals.stats import TOLERANCE, TestResult, mcnemar_worse, sign_flip_worse

OVERALL = "overall"


@dataclass(frozen=True)
class ComparisonOptions:
    """How strict the comparison is, and what power the report measures cells against."""

    min_effect: float = 0.03
    alpha: float = 0.05
    power: float = 0.8
    resamples: int = 100_000
    seed: int = 0


@dataclass(frozen=True)
class Cell:
    """The paired case values of one scenario (or overall) x metric."""

    scenario: str
    metric: str
    baseline: np.ndarray
    candidate: np.ndarray

    @property
    def worsening(self) -> np.ndarray:
        """Per case, how much worse the candidate is (positive = worse, whatever the metric's direction)."""
        return np.asarray([worse_by(self.metric, d) for d in self.candidate - self.baseline], dtype=float)


def worse_by(metric: str, delta: float) -> float:
    """How much worse the candidate is, in rate units (negative when it is better)."""
    return float(delta) if metric in LOWER_IS_BETTER else -float(delta)


def compare_cells(
    baseline: list[CaseScores], candidate: list[CaseScores], options: ComparisonOptions
) -> list[MetricComparison]:
    """One comparison per (overall or scenario) x metric over the cases both runs scored."""
    paired = _pairs(baseline, candidate)
    overall = {metric: cells[OVERALL] for metric, cells in paired.items()}
    tests = {metric: _tester(metric, cell, options) for metric, cell in overall.items()}
    raw = {
        (metric, scenario): tests[metric](cell.worsening)
        for metric, cells in paired.items()
        for scenario, cell in cells.items()
    }
    metrics = list(overall)
    intersections = [
        union_p(raw[(m, OVERALL)].p_value, [raw[(m, s)].p_value for s in paired[m] if s != OVERALL])
        for m in metrics
    ]
    adjusted = dict(zip(metrics, adjust_overall(intersections), strict=True))
    results: dict[tuple[str, str], MetricComparison] = {}
    for metric, cells in paired.items():
        scenarios = {name: cell for name, cell in cells.items() if name != OVERALL}
        scenario_adjusted = adjust_scenarios(
            adjusted[metric],
            {name: cell.worsening for name, cell in scenarios.items()},
            {name: raw[(metric, name)].p_value for name in scenarios},
            tests[metric].p_value,
        )
        # a drop confined to one cell, the rest of its metric unchanged, must reach Holm's strictest
        # step through the pooled half of the metric's intersection test
        level = options.alpha / len(metrics) * (POOLED_SHARE if len(scenarios) > 1 else 1.0)
        test = tests[metric]
        results[(metric, OVERALL)] = _comparison(
            cells[OVERALL], test.name, raw[(metric, OVERALL)], adjusted[metric], level, options
        )
        for name, cell in scenarios.items():
            results[(metric, name)] = _comparison(
                cell, test.name, raw[(metric, name)], scenario_adjusted[name], level, options
            )
    scenario_order = sorted({s for _, s in results}, key=lambda s: (s != OVERALL, s))
    return [results[(m, s)] for s in scenario_order for m in METRICS if (m, s) in results]


def _pairs(baseline: list[CaseScores], candidate: list[CaseScores]) -> dict[str, dict[str, Cell]]:
    """metric -> scenario (and overall) -> the cases scored in both runs; a case either run left
    unscored on a metric is left out of that metric."""
    by_key = {case.case_key: case for case in candidate}
    values: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for base in baseline:
        cand = by_key.get(base.case_key)
        if cand is None:
            continue
        for metric, value in base.scores.items():
            if metric in cand.scores:
                pair = (float(value), float(cand.scores[metric]))
                values[metric][OVERALL].append(pair)
                values[metric][base.scenario].append(pair)
    return {
        metric: {
            scenario: Cell(scenario, metric, np.array([b for b, _ in pairs]), np.array([c for _, c in pairs]))
            for scenario, pairs in scenarios.items()
        }
        for metric, scenarios in values.items()
        if metric in METRICS
    }


class _Tester:
    """The paired test a metric uses for every cell and union of cells (chosen once per metric)."""

    def __init__(self, mcnemar: bool, options: ComparisonOptions) -> None:
        self.name: Literal["mcnemar", "sign_flip"] = "mcnemar" if mcnemar else "sign_flip"
        self.options = options

    def p_value(self, worsening: np.ndarray) -> float:
        """The p-value alone (for unions of scenarios)."""
        return self(worsening).p_value

    def __call__(self, worsening: np.ndarray) -> TestResult:
        if self.name == "mcnemar":
            worse = int(np.count_nonzero(worsening > TOLERANCE))
            better = int(np.count_nonzero(worsening < -TOLERANCE))
            return TestResult(mcnemar_worse(worse, better), "exact")
        return sign_flip_worse(worsening, resamples=self.options.resamples, seed=self.options.seed)


def _tester(metric: str, overall: Cell, options: ComparisonOptions) -> _Tester:
    """Exact McNemar for a pass/fail metric scored 0/1; the sign-flip test for graded metrics and for
    pass/fail metrics averaged over repeats (the two agree on 0/1 data)."""
    values = np.concatenate([overall.baseline, overall.candidate])
    binary = bool(np.all((values == 0.0) | (values == 1.0)))
    return _Tester(metric not in GRADED_METRICS and binary, options)


def _comparison(
    cell: Cell,
    test: Literal["mcnemar", "sign_flip"],
    result: TestResult,
    p_adjusted: float,
    level: float,
    options: ComparisonOptions,
) -> MetricComparison:
    worsening = cell.worsening
    baseline_mean, candidate_mean = float(cell.baseline.mean()), float(cell.candidate.mean())
    delta = candidate_mean - baseline_mean
    significant = p_adjusted < options.alpha
    binary = bool(np.all((cell.baseline == 0.0) | (cell.baseline == 1.0)))
    binary = binary and bool(np.all((cell.candidate == 0.0) | (cell.candidate == 1.0)))
    headroom = cell.baseline if cell.metric not in LOWER_IS_BETTER else 1.0 - cell.baseline
    better = worsening[worsening < -TOLERANCE]
    power = cell_power(
        PowerInputs(
            num_pairs=len(worsening),
            num_good=float(headroom.sum()),
            num_better=len(better),
            better_square_sum=float(np.square(better).sum()),
            level=level,
            power=options.power,
            binary=binary,
        ),
        options.min_effect,
    )
    detectable = power.min_detectable
    return MetricComparison(
        scenario=cell.scenario,
        metric=cell.metric,
        baseline=baseline_mean,
        candidate=candidate_mean,
        delta=delta,
        num_pairs=len(worsening),
        test=test,
        exact=result.method == "exact",
        p_value=result.p_value,
        p_adjusted=p_adjusted,
        significant=significant,
        regression=significant and worse_by(cell.metric, delta) >= options.min_effect - TOLERANCE,
        num_worse=int(np.count_nonzero(worsening > TOLERANCE)),
        num_better=len(better),
        level=level,
        min_detectable=detectable,
        max_drop=power.max_drop,
        underpowered=detectable is None or detectable > options.min_effect + TOLERANCE,
        suggested_num_cases=power.suggested_num_cases,
    )
