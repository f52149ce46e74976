"""Paired significance tests and confidence intervals for comparing two runs on the same cases."""

from collections.abc import Sequence

import numpy as np
from scipy import stats

CONFIDENCE = 0.95


def mcnemar_exact(baseline: Sequence[bool], candidate: Sequence[bool]) -> float:
    """Two-sided exact McNemar p-value for paired pass/fail outcomes.

    Only discordant pairs count: ``b`` passed in the baseline only, ``c`` in the candidate only; under
    the null each discordant pair is a fair coin, so p = min(1, 2 * P(Binomial(b + c, 1/2) <= min(b, c))).
    """
    if len(baseline) != len(candidate):
        raise ValueError("paired outcomes need equal lengths")
    b = sum(1 for x, y in zip(baseline, candidate, strict=True) if x and not y)
    c = sum(1 for x, y in zip(baseline, candidate, strict=True) if y and not x)
    if b + c == 0:
        return 1.0
    return float(min(1.0, 2.0 * stats.binom.cdf(min(b, c), b + c, 0.5)))


def paired_bootstrap(
    baseline: Sequence[float], candidate: Sequence[float], *, resamples: int, seed: int
) -> float:
    """Two-sided paired bootstrap p-value for the mean difference ``candidate - baseline``.

    Resamples the per-case differences with replacement and counts how often the resampled mean lies
    at least as far from the observed mean as the observed mean lies from zero (the shifted-null
    bootstrap); p = (1 + count) / (1 + resamples).
    """
    differences = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    if differences.size == 0:
        return 1.0
    observed = float(differences.mean())
    if np.allclose(differences, observed):
        return 1.0 if abs(observed) < 1e-12 else 1.0 / (1 + resamples)
    means = _resampled_means(differences, resamples, seed)
    extreme = int(np.count_nonzero(np.abs(means - observed) >= abs(observed) - 1e-12))
    return (1 + extreme) / (1 + resamples)


def _resampled_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, values.size, size=(resamples, values.size))
    means: np.ndarray = values[indices].mean(axis=1)
    return means


def bootstrap_ci(values: Sequence[float], *, resamples: int, seed: int) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean (a constant or single value gives a point)."""
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
    )
    return (float(result.confidence_interval.low), float(result.confidence_interval.high))


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
