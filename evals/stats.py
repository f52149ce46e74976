"""Paired one-sided tests, Holm's step-down and bootstrap intervals for comparing two runs on the same cases.

Every test here asks one question of paired per-case values: did the candidate get *worse*? The input
is each case's worsening ``w_i`` (candidate minus baseline, signed so that positive means worse); under
the null the two runs are exchangeable within each case, so each ``w_i`` is as likely to carry the
opposite sign. On pass/fail values (``w_i`` in -1, 0, 1) the sign-flip test and exact McNemar are the
same test, so a cell's p-value does not depend on which of the two computes it.

scipy.stats is imported inside the functions that use it: at the top it would cost every `evallens`
command over a second of start-up, most of which never compute a statistic.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

CONFIDENCE = 0.95
TOLERANCE = 1e-9
# Exact sign-flip distributions: values on a lattice of step 1/L (L <= MAX_DENOMINATOR) are convolved
# exactly; anything else with at most MAX_ENUMERATED nonzero values is enumerated; else Monte Carlo.
MAX_DENOMINATOR = 720
MAX_LATTICE_POINTS = 200_000
MAX_ENUMERATED = 16
MONTE_CARLO_CHUNK = 8192
BOOTSTRAP_BATCH = 8192  # resamples scipy's bootstrap draws at once: memory bounded whatever the setting

Method = Literal["exact", "monte_carlo"]


@dataclass(frozen=True)
class TestResult:
    """A one-sided p-value for "the candidate is worse" and how it was computed."""

    p_value: float
    method: Method
    resamples: int = 0


def mcnemar_worse(num_worse: int, num_better: int) -> float:
    """One-sided exact McNemar p-value: P(X >= num_worse) for X ~ Binomial(discordant pairs, 1/2).

    ``num_worse`` pairs passed in the baseline only, ``num_better`` in the candidate only; pairs that
    agree carry no information about a change and do not count.
    """
    from scipy import stats

    if num_worse < 0 or num_better < 0:
        raise ValueError("discordant counts cannot be negative")
    if num_worse == 0:
        return 1.0
    return float(stats.binom.sf(num_worse - 1, num_worse + num_better, 0.5))


def sign_flip_worse(worsening: Sequence[float] | np.ndarray, *, resamples: int, seed: int) -> TestResult:
    """One-sided paired sign-flip permutation test that the mean worsening is above zero.

    The statistic is the sum of ``worsening``; its null distribution flips the sign of each case's
    value independently. Exact (by convolution on a lattice, or by enumeration) whenever possible;
    otherwise Monte Carlo with p = (1 + hits) / (1 + resamples), never below 1 / (1 + resamples).
    """
    values = np.asarray(worsening, dtype=float)
    nonzero = values[np.abs(values) > TOLERANCE]
    if nonzero.size == 0:
        return TestResult(1.0, "exact")
    weights = _lattice_weights(np.abs(nonzero))
    if weights is not None:
        return TestResult(_lattice_p(weights, nonzero > 0), "exact")
    if nonzero.size <= MAX_ENUMERATED:
        return TestResult(_enumerated_p(nonzero), "exact")
    return TestResult(_monte_carlo_p(nonzero, resamples, seed), "monte_carlo", resamples)


def _lattice_weights(magnitudes: np.ndarray) -> np.ndarray | None:
    """Integer weights ``magnitude * L`` when every magnitude is a multiple of one small 1/L."""
    denominator = 1
    for value in np.unique(magnitudes):
        fraction = Fraction(float(value)).limit_denominator(MAX_DENOMINATOR)
        if abs(float(fraction) - float(value)) > TOLERANCE:
            return None
        denominator = math.lcm(denominator, fraction.denominator)
        if denominator > MAX_DENOMINATOR:
            return None
    weights: np.ndarray = np.rint(magnitudes * denominator).astype(np.int64)
    if int(weights.sum()) + 1 > MAX_LATTICE_POINTS:
        return None
    return weights


def _lattice_p(weights: np.ndarray, positive: np.ndarray) -> float:
    # sum of flipped signs = 2 * T - total, with T the sum of the weights that keep a positive sign;
    # T's distribution is the convolution of one fair coin per case
    total = int(weights.sum())
    distribution = np.zeros(total + 1)
    distribution[0] = 1.0
    reach = 0
    for weight in sorted(int(w) for w in weights):
        shifted = distribution[: reach + 1].copy()
        distribution[: reach + 1] *= 0.5
        distribution[weight : weight + reach + 1] += 0.5 * shifted
        reach += weight
    observed = int(weights[positive].sum())
    return float(min(1.0, distribution[observed:].sum()))


def _enumerated_p(nonzero: np.ndarray) -> float:
    size = nonzero.size
    patterns = (np.arange(2**size)[:, None] >> np.arange(size)) & 1
    sums = (2 * patterns - 1) @ np.abs(nonzero)
    observed = float(nonzero.sum())
    return float(np.mean(sums >= observed - _slack(nonzero)))


def _monte_carlo_p(nonzero: np.ndarray, resamples: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    magnitudes = np.abs(nonzero)
    threshold = float(nonzero.sum()) - _slack(nonzero)
    hits, done = 0, 0
    while done < resamples:
        rows = min(MONTE_CARLO_CHUNK, resamples - done)
        signs = rng.integers(0, 2, size=(rows, magnitudes.size), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(signs @ magnitudes >= threshold))
        done += rows
    return (1 + hits) / (1 + resamples)


def _slack(values: np.ndarray) -> float:
    """Floating-point slack for ">=" on sums, so that ties with the observed sum count as ties."""
    return TOLERANCE * max(1.0, float(np.abs(values).sum()))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order (same as statsmodels' ``holm``)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running_max = 0.0
    for rank, index in enumerate(order):
        running_max = max(running_max, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running_max
    return adjusted


def bootstrap_ci(values: Sequence[float], *, resamples: int, seed: int) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean (a constant or single value gives a point)."""
    from scipy import stats

    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return (float("nan"), float("nan"))
    if data.size == 1 or np.allclose(data, data[0]):
        return (float(data[0]), float(data[0]))
    result = stats.bootstrap(
        (data,),
        np.mean,
        n_resamples=resamples,
        confidence_level=CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(seed),
        batch=BOOTSTRAP_BATCH,
    )
    return (float(result.confidence_interval.low), float(result.confidence_interval.high))
