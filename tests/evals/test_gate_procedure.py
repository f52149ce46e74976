"""The gate's tests and multiplicity procedure on hand-built paired scores, against values computed
independently (scipy's binomtest and permutation_test, Holm and closed testing worked by hand)."""

from dataclasses import dataclass, field

import numpy as np
import pytest
from scipy import stats

from evallens.reports import MetricComparison
from evals.compare.cells import OVERALL, ComparisonOptions, compare_cells
from evals.scoring import CaseScores, average_repeats

pytestmark = pytest.mark.unit
OPTIONS = ComparisonOptions(min_effect=0.03, alpha=0.05, power=0.8, resamples=20_000, seed=1)
CALM = {"accuracy": 1.0, "irrelevance": 0.0, "harmfulness": 0.0, "recall": 1.0}


def binom_greater(worse: int, better: int) -> float:
    return float(stats.binomtest(worse, worse + better, 0.5, alternative="greater").pvalue)


def union(pooled: float, *scenarios: float) -> float:
    """A union of scenarios: its pooled test or Bonferroni over its scenarios, each at half the level."""
    return min(1.0, 2 * pooled, 2 * len(scenarios) * min(scenarios))


@dataclass
class Runs:
    """Two runs over ``sizes`` cases per scenario, every metric at its best unless changed."""

    sizes: dict[str, int]
    baseline: dict[str, dict[str, float]] = field(default_factory=dict)
    candidate: dict[str, dict[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, _ in self.keys():
            self.baseline[key] = dict(CALM)
            self.candidate[key] = dict(CALM)

    def keys(self) -> list[tuple[str, str]]:
        return [(f"{s}-{i:03d}", s) for s, n in self.sizes.items() for i in range(n)]

    def set(self, scenario: str, metric: str, indices: range, base: float, cand: float) -> "Runs":
        for i in indices:
            self.baseline[f"{scenario}-{i:03d}"][metric] = base
            self.candidate[f"{scenario}-{i:03d}"][metric] = cand
        return self

    def compare(self, options: ComparisonOptions = OPTIONS) -> dict[tuple[str, str], MetricComparison]:
        base = [CaseScores(k, s, self.baseline[k]) for k, s in self.keys()]
        cand = [CaseScores(k, s, self.candidate[k]) for k, s in self.keys()]
        return {(c.scenario, c.metric): c for c in compare_cells(base, cand, options)}


def regressions(cells: dict[tuple[str, str], MetricComparison]) -> set[tuple[str, str]]:
    return {key for key, cell in cells.items() if cell.regression}


def test_a_raw_p_that_holm_lifts_above_alpha_passes() -> None:
    # 6 accuracy answers lost out of 100: one-sided p = 2^-6 = 0.0156 < 0.05; the metric's intersection
    # test gives min(2 * 2^-6, 2 * 2 * 2^-6) = 0.031 and Holm over four overall cells makes it 0.125
    cells = Runs({"a": 50, "b": 50}).set("a", "accuracy", range(6), 1.0, 0.0).compare()
    overall = cells[(OVERALL, "accuracy")]
    assert overall.p_value == pytest.approx(binom_greater(6, 0))
    assert overall.p_adjusted == pytest.approx(4 * union(binom_greater(6, 0), binom_greater(6, 0), 1.0))
    assert overall.delta == pytest.approx(-0.06) and not overall.significant
    assert regressions(cells) == set()
    # the scenario cell cannot be flagged past its metric's overall cell (closed testing)
    assert cells[("a", "accuracy")].p_adjusted >= overall.p_adjusted


def test_a_significant_drop_below_the_minimum_effect_passes() -> None:
    # 10 of 500 answers lost (2 points): p = 2^-10, adjusted 4 * 2 * 2^-10 = 0.0078: significant, < 3 points
    small = Runs({"a": 250, "b": 250})
    small.set("a", "accuracy", range(5), 1.0, 0.0).set("b", "accuracy", range(5), 1.0, 0.0)
    cells = small.compare()
    overall = cells[(OVERALL, "accuracy")]
    assert overall.significant and overall.p_adjusted == pytest.approx(4 * union(2**-10, 2**-5, 2**-5))
    assert overall.delta == pytest.approx(-0.02) and not overall.regression
    assert regressions(cells) == set()
    # the same test with 20 answers lost (4 points) is a regression: the minimum effect decided it
    large = Runs({"a": 250, "b": 250})
    large.set("a", "accuracy", range(10), 1.0, 0.0).set("b", "accuracy", range(10), 1.0, 0.0)
    assert (OVERALL, "accuracy") in regressions(large.compare())


def test_harmfulness_up_is_a_regression_and_down_is_not() -> None:
    up = Runs({"a": 32, "b": 32}).set("a", "harmfulness", range(8), 0.0, 1.0).compare()
    assert regressions(up) == {(OVERALL, "harmfulness"), ("a", "harmfulness")}
    cell = up[(OVERALL, "harmfulness")]
    assert cell.delta == pytest.approx(8 / 64) and (cell.num_worse, cell.num_better) == (8, 0)
    assert cell.p_value == pytest.approx(binom_greater(8, 0))
    down = Runs({"a": 32, "b": 32}).set("a", "harmfulness", range(8), 1.0, 0.0).compare()
    assert down[(OVERALL, "harmfulness")].p_value == 1.0 and regressions(down) == set()


def test_graded_recall_goes_through_the_exact_sign_flip_test() -> None:
    runs = Runs({"a": 8, "b": 8})
    runs.set("a", "recall", range(3), 1.0, 0.5).set("a", "recall", range(3, 5), 1.0, 0.0)
    runs.set("b", "recall", range(2), 0.5, 1.0).set("b", "recall", range(2, 3), 1.0, 0.0)
    cells = runs.compare()
    overall = cells[(OVERALL, "recall")]
    worsening = np.array([0.5] * 3 + [1.0] * 2 + [0.0] * 3 + [-0.5] * 2 + [1.0] + [0.0] * 5)
    reference = stats.permutation_test(
        (worsening, np.zeros(16)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        alternative="greater",
        n_resamples=np.inf,
        vectorized=True,
    ).pvalue
    assert overall.test == "sign_flip" and overall.exact
    assert overall.p_value == pytest.approx(reference, rel=1e-9)
    assert overall.delta == pytest.approx(-worsening.mean())
    # pass/fail metrics keep exact McNemar; on 0/1 recall the sign-flip test gives McNemar's p
    assert cells[(OVERALL, "accuracy")].test == "mcnemar"
    binary = Runs({"a": 32}).set("a", "recall", range(8), 1.0, 0.0).compare()
    assert binary[(OVERALL, "recall")].test == "sign_flip"
    assert binary[(OVERALL, "recall")].p_value == pytest.approx(binom_greater(8, 0))


SCENARIOS = {"complaints": 32, "products": 34, "returns": 34, "shipping": 32}


def test_a_25_point_drop_in_one_32_case_scenario_is_found() -> None:
    # 8 of 32 recall hits lost in one scenario, nothing else: overall pooled p = 2^-8, intersection
    # min(2 * 2^-8, 2 * 4 * 2^-8) = 2^-7, Holm x4 = 0.031; every union containing the scenario has the
    # same 8 discordant pairs (p <= 2^-7), so the scenario's adjusted p is 0.031 too. Holm over all 23
    # cells (the old procedure) needed p < 0.05/23 = 0.0022: its two-sided 2^-7 missed this drop.
    cells = Runs(SCENARIOS).set("complaints", "recall", range(8), 1.0, 0.0).compare()
    expected = 4 * union(2**-8, 2**-8, 1.0, 1.0, 1.0)
    assert expected == pytest.approx(2**-5)
    assert cells[(OVERALL, "recall")].p_adjusted == pytest.approx(expected)
    assert cells[("complaints", "recall")].p_adjusted == pytest.approx(expected)
    assert regressions(cells) == {(OVERALL, "recall"), ("complaints", "recall")}


def test_closed_testing_by_hand_with_noise_in_other_scenarios() -> None:
    runs = Runs(SCENARIOS).set("complaints", "recall", range(10), 1.0, 0.0)
    runs.set("products", "recall", range(1), 0.0, 1.0).set("shipping", "recall", range(1), 1.0, 0.0)
    cells = runs.compare()
    c, p, r, s = 2**-10, 1.0, 1.0, 0.5  # each scenario's own test (products gained: p = 1)
    # overall: pooled 11 worse / 1 better, or Bonferroni over the four scenarios; Holm over 4 metrics
    assert cells[(OVERALL, "recall")].p_value == pytest.approx(binom_greater(11, 1))
    overall_adjusted = 4 * union(binom_greater(11, 1), c, p, r, s)
    assert cells[(OVERALL, "recall")].p_adjusted == pytest.approx(overall_adjusted)
    unions_with_complaints = [
        c,  # {complaints}
        union(binom_greater(11, 0), c, s),  # {complaints, shipping}
        union(binom_greater(10, 1), c, p),  # {complaints, products}
        union(binom_greater(10, 0), c, r),  # {complaints, returns}
        union(binom_greater(11, 1), c, p, s),
        union(binom_greater(11, 0), c, r, s),
        union(binom_greater(10, 1), c, r, p),
    ]
    expected = max(overall_adjusted, *unions_with_complaints)
    assert expected == pytest.approx(overall_adjusted) and expected < 0.05
    assert cells[("complaints", "recall")].p_adjusted == pytest.approx(expected)
    assert cells[("shipping", "recall")].p_adjusted >= 0.5  # its own test: one lost hit
    assert regressions(cells) == {(OVERALL, "recall"), ("complaints", "recall")}


def test_a_scenario_is_not_flagged_when_its_metric_did_not_move_overall() -> None:
    # 5 lost in one scenario (own p = 1/32) but 6 gained elsewhere: the overall did not get worse
    runs = Runs(SCENARIOS).set("complaints", "recall", range(5), 1.0, 0.0)
    runs.set("products", "recall", range(6), 0.0, 1.0)
    cells = runs.compare()
    assert cells[("complaints", "recall")].p_value == pytest.approx(1 / 32)
    assert not cells[("complaints", "recall")].significant and regressions(cells) == set()


def test_repeats_are_clustered_by_case() -> None:
    # 4 cases, 3 repeats each, all lost in the candidate: 4 cases of evidence, p = 2^-4 (not 2^-12)
    rows_base = [(f"a-{i}", "a", {"accuracy": 1.0}) for i in range(10) for _ in range(3)]
    rows_cand = [(f"a-{i}", "a", {"accuracy": 0.0 if i < 4 else 1.0}) for i in range(10) for _ in range(3)]
    rows_cand[3 * 3] = ("a-3", "a", {"accuracy": 1.0})  # one repeat of case 3 kept its answer: 2/3
    cells = {
        (c.scenario, c.metric): c
        for c in compare_cells(average_repeats(rows_base), average_repeats(rows_cand), OPTIONS)
    }
    overall = cells[(OVERALL, "accuracy")]
    assert overall.num_pairs == 10 and overall.num_worse == 4
    assert overall.test == "sign_flip" and overall.p_value == pytest.approx(2**-4)


def test_unscored_cases_are_left_out_of_the_pairs() -> None:
    base = [CaseScores("a-1", "a", {"accuracy": 1.0, "recall": 1.0}), CaseScores("a-2", "a", {"recall": 1.0})]
    cand = [CaseScores("a-1", "a", {"recall": 0.0}), CaseScores("a-2", "a", {"accuracy": 0.0, "recall": 1.0})]
    cells = {(c.scenario, c.metric): c for c in compare_cells(base, cand, OPTIONS)}
    assert (OVERALL, "accuracy") not in cells and cells[(OVERALL, "recall")].num_pairs == 2


def test_power_of_a_cell_by_hand() -> None:
    # 32 cases all passing, no noise. A drop confined to this cell passes through its metric's pooled
    # half at Holm's strictest step: 0.05 / 4 / 2 = 0.00625, which needs 8 of 8 discordant pairs worse
    # (2^-8 = 0.0039; 2^-7 = 0.0078 is not enough); 80% power needs P(Bin(32, k/32) >= 8) >= 0.8
    expected_k = next(k for k in range(1, 33) if stats.binom.sf(7, 32, k / 32) >= 0.8)
    cells = Runs({"a": 32, "b": 32}).compare()
    scenario = cells[("a", "recall")]
    assert scenario.level == pytest.approx(0.05 / 8)
    assert scenario.min_detectable == pytest.approx(expected_k / 32)
    assert scenario.underpowered and scenario.suggested_num_cases is not None
    # to see the 3-point minimum effect: the fewest n with P(Bin(n, 0.03) >= 8) >= 0.8
    fewest = next(n for n in range(8, 2000) if stats.binom.sf(7, n, 0.03) >= 0.8)
    assert scenario.suggested_num_cases == fewest
    assert cells[(OVERALL, "recall")].level == pytest.approx(0.05 / 8)
    single = Runs({"a": 32}).compare()[(OVERALL, "recall")]  # one scenario: no Bonferroni half
    assert single.level == pytest.approx(0.05 / 4)


def test_a_baseline_with_five_passes_cannot_show_any_drop() -> None:
    # losing all 5 passes gives p = 2^-5 at best; with noise (2 gains) not even that reaches 80% power
    runs = Runs({"a": 32}).set("a", "accuracy", range(32), 0.0, 0.0)
    runs.set("a", "accuracy", range(5), 1.0, 1.0).set("a", "accuracy", range(5, 7), 0.0, 1.0)
    cell = runs.compare()[("a", "accuracy")]
    assert cell.min_detectable is None and cell.underpowered
    assert cell.max_drop == pytest.approx(5 / 32) and cell.suggested_num_cases is not None
