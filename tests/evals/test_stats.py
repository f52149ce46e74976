"""The paired tests against independent implementations (scipy) and answers worked out by hand."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from evals.stats import bootstrap_ci, holm, mcnemar_worse, sign_flip_worse

pytestmark = pytest.mark.unit


def _scipy_exact(worsening: np.ndarray) -> float:
    """scipy's exact paired permutation test (every sign pattern) for a positive mean worsening."""
    result = stats.permutation_test(
        (worsening, np.zeros_like(worsening)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        alternative="greater",
        n_resamples=np.inf,
        vectorized=True,
    )
    p_value: float = result.pvalue
    return p_value


@pytest.mark.parametrize(
    ("worse", "better"), [(0, 0), (0, 5), (1, 0), (5, 1), (8, 0), (9, 1), (10, 2), (3, 3), (25, 10), (40, 60)]
)
def test_mcnemar_matches_scipy_binomtest(worse: int, better: int) -> None:
    expected = (
        1.0 if worse == 0 else stats.binomtest(worse, worse + better, 0.5, alternative="greater").pvalue
    )
    assert mcnemar_worse(worse, better) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_by_hand() -> None:
    # 5 worse, 1 better: P(X >= 5 | 6) = (C(6,5) + C(6,6)) / 64 = 7/64
    assert mcnemar_worse(5, 1) == pytest.approx(7 / 64)
    assert mcnemar_worse(8, 0) == pytest.approx(1 / 256)
    with pytest.raises(ValueError):
        mcnemar_worse(-1, 2)


def _rational_exact(worsening: np.ndarray) -> float:
    """Every sign pattern, summed in exact fractions: ties with the observed sum are exact too."""
    values = [Fraction(float(v)).limit_denominator(60) for v in worsening]
    observed = sum(values)
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(values)):
        hits += sum((sign * abs(v) for sign, v in zip(signs, values, strict=True)), Fraction(0)) >= observed
    return hits / (1 << len(values))


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_is_the_exact_permutation_test(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lattice = rng.choice([-1.0, -0.5, -1 / 3, 0.0, 0.0, 1 / 3, 0.5, 1.0], size=12)  # graded recall-like
    result = sign_flip_worse(lattice, resamples=1000, seed=1)
    assert result.method == "exact"
    # scipy compares floating sums, so a tie at an observed sum of 0 can go either way: count in fractions
    assert result.p_value == pytest.approx(_rational_exact(lattice), rel=1e-12)
    continuous = rng.normal(0.3, 1.0, size=11)  # no lattice: enumerated, no ties
    result = sign_flip_worse(continuous, resamples=1000, seed=1)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(_scipy_exact(continuous), rel=1e-9)


@pytest.mark.parametrize(("worse", "better", "ties"), [(8, 0, 24), (9, 1, 22), (17, 9, 100), (0, 4, 10)])
def test_sign_flip_on_pass_fail_is_exact_mcnemar(worse: int, better: int, ties: int) -> None:
    worsening = np.array([1.0] * worse + [-1.0] * better + [0.0] * ties)
    result = sign_flip_worse(worsening, resamples=1000, seed=3)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(mcnemar_worse(worse, better), rel=1e-12)


def test_equal_nonzero_differences_have_no_floor() -> None:
    # the old bootstrap returned 1/(1+resamples) whatever n; the exact p is 2^-n
    for n in (4, 30, 120):
        assert sign_flip_worse([0.5] * n, resamples=2000, seed=1).p_value == pytest.approx(0.5**n, rel=1e-9)
    assert sign_flip_worse([0.0] * 10, resamples=2000, seed=1).p_value == 1.0
    assert sign_flip_worse([-0.25] * 10, resamples=2000, seed=1).p_value == 1.0


def test_repeated_pass_fail_averages_stay_exact() -> None:
    # three repeats per case: case means in thirds, still an exact (lattice) distribution
    worsening = np.array([1.0, 2 / 3, 1 / 3, 1.0, -1 / 3, 0.0, 2 / 3, 1.0, 0.0, -2 / 3, 1 / 3, 1.0])
    result = sign_flip_worse(worsening, resamples=1000, seed=1)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(_rational_exact(worsening), rel=1e-12)


def test_monte_carlo_agrees_with_scipy_and_respects_its_floor() -> None:
    rng = np.random.default_rng(11)
    worsening = rng.normal(0.15, 1.0, size=60)  # continuous and too many to enumerate
    result = sign_flip_worse(worsening, resamples=40_000, seed=5)
    assert result.method == "monte_carlo" and result.resamples == 40_000
    reference = stats.permutation_test(
        (worsening, np.zeros_like(worsening)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        alternative="greater",
        n_resamples=40_000,
        vectorized=True,
        rng=np.random.default_rng(9),
    ).pvalue
    # two independent Monte Carlo estimates: within 5 standard errors of each other
    error = math.sqrt(2 * reference * (1 - reference) / 40_000)
    assert abs(result.p_value - reference) < 5 * error
    all_worse = np.abs(rng.normal(0.0, 1.0, size=60)) + 0.01
    floor = sign_flip_worse(all_worse, resamples=999, seed=2)
    assert floor.p_value == pytest.approx(1 / 1000)  # never below what 999 resamples can resolve


@pytest.mark.parametrize("kind", ["pass_fail", "graded", "continuous"])
def test_null_rejection_rate_is_at_most_alpha(kind: str) -> None:
    """Under the null (both runs draw each case's score from the same distribution) the test rejects
    at most alpha of the time, within Monte Carlo error."""
    rng = np.random.default_rng({"pass_fail": 1, "graded": 2, "continuous": 3}[kind])
    alpha, simulations, n = 0.05, 2000, 32
    rejections = 0
    for i in range(simulations):
        if kind == "pass_fail":
            chance = rng.beta(2, 2, size=n)
            base, cand = rng.random(n) < chance, rng.random(n) < chance
            worsening = base.astype(float) - cand.astype(float)
        elif kind == "graded":
            found = rng.beta(5, 1, size=n)
            refs = rng.choice([1, 2, 3], size=n)
            worsening = (rng.binomial(refs, found) - rng.binomial(refs, found)) / refs
        else:
            worsening = rng.normal(0.0, 1.0, size=n) - rng.normal(0.0, 1.0, size=n)
        p = sign_flip_worse(worsening, resamples=2000, seed=i).p_value
        rejections += p <= alpha
    rate = rejections / simulations
    standard_error = math.sqrt(alpha * (1 - alpha) / simulations)
    assert rate <= alpha + 3 * standard_error
    if kind == "continuous":  # no ties: the test uses its level, it is not vacuously conservative
        assert rate >= alpha - 3 * standard_error


def test_holm_on_hand_worked_families_with_ties() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, 2*0.03, max(0.06, 1*0.04) (statsmodels' holm)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # ties: 0.01, 0.01 -> 4*0.01 = 0.04, max(0.04, 3*0.01) = 0.04; 0.03 -> 0.06; 0.04 -> max(0.06, 0.04)
    assert holm([0.01, 0.01, 0.04, 0.03]) == pytest.approx([0.04, 0.04, 0.06, 0.06])
    # a raw 0.02 among four cells: 4 * 0.02 = 0.08, above alpha 0.05
    assert holm([0.02, 0.5, 0.9, 1.0]) == pytest.approx([0.08, 1.0, 1.0, 1.0])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_bootstrap_ci_brackets_the_mean() -> None:
    values = [1.0] * 30 + [0.0] * 10
    low, high = bootstrap_ci(values, resamples=4000, seed=3)
    # the normal approximation gives 0.75 +- 1.96 * sqrt(0.75 * 0.25 / 40) = [0.616, 0.884]
    assert low == pytest.approx(0.616, abs=0.03) and high == pytest.approx(0.884, abs=0.03)
    assert bootstrap_ci([0.4, 0.4], resamples=1000, seed=1) == (0.4, 0.4)
    assert all(math.isnan(x) for x in bootstrap_ci([], resamples=1000, seed=1))
