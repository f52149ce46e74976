"""Statistics against answers worked out by hand."""

import math

import pytest

from evals.stats import bootstrap_ci, holm, mcnemar_exact, paired_bootstrap


def test_mcnemar_counts_only_discordant_pairs() -> None:
    # b = 5 (baseline-only passes), c = 1: p = 2 * (C(6,0) + C(6,1)) / 2^6 = 14/64
    baseline = [True] * 5 + [False] + [True] * 10 + [False] * 4
    candidate = [False] * 5 + [True] + [True] * 10 + [False] * 4
    assert mcnemar_exact(baseline, candidate) == pytest.approx(14 / 64)


def test_mcnemar_extremes() -> None:
    # 10 discordant pairs all one way: p = 2 / 2^10
    assert mcnemar_exact([True] * 10, [False] * 10) == pytest.approx(2 / 1024)
    assert mcnemar_exact([True, False], [True, False]) == 1.0
    # balanced discordance is capped at 1
    assert mcnemar_exact([True, False], [False, True]) == 1.0


def test_paired_bootstrap_matches_the_enumerated_distribution() -> None:
    # differences [0, 1]: resampled means 0, 0.5, 1 with probability 1/4, 1/2, 1/4; observed mean 0.5;
    # |m* - 0.5| >= 0.5 happens for 0 and 1, so p -> 1/2
    p = paired_bootstrap([0.0, 0.0], [0.0, 1.0], resamples=20000, seed=7)
    assert p == pytest.approx(0.5, abs=0.02)


def test_paired_bootstrap_constant_shift_and_no_change() -> None:
    assert paired_bootstrap([1.0] * 8, [0.5] * 8, resamples=999, seed=1) == pytest.approx(1 / 1000)
    assert paired_bootstrap([0.3, 0.7], [0.3, 0.7], resamples=999, seed=1) == 1.0


def test_holm_on_a_known_family() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, 2*0.03, max(0.06, 1*0.04) (statsmodels' holm)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_bootstrap_ci_brackets_the_mean() -> None:
    values = [1.0] * 30 + [0.0] * 10
    low, high = bootstrap_ci(values, resamples=4000, seed=3)
    # the normal approximation gives 0.75 +- 1.96 * sqrt(0.75 * 0.25 / 40) = [0.616, 0.884]
    assert low == pytest.approx(0.616, abs=0.03) and high == pytest.approx(0.884, abs=0.03)
    assert bootstrap_ci([0.4, 0.4], resamples=1000, seed=1) == (0.4, 0.4)
    assert all(math.isnan(x) for x in bootstrap_ci([], resamples=1000, seed=1))
