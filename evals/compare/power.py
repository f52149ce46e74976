"""What a cell can detect: the smallest drop its test finds with the configured power, and the cases it needs.

Pass/fail cells use the exact one-sided McNemar test's power, conditioned on the baseline: a drop can
only come from the ``num_good`` cases the baseline got right, and the candidate's chance improvements
(the noise a sampling temperature adds) are taken at the rate seen in the cell. Graded cells (and
pass/fail cells averaged over repeats) use the normal approximation of the paired test with the null
variance mirrored from the cell's improvements. Drops are in rate units (0.05 = 5 points).

scipy.stats is imported inside the functions that use it: at the top it would cost every `evallens`
command over a second of start-up, most of which never compute a statistic.
"""

import functools
import math
from dataclasses import dataclass

import numpy as np

MAX_SUGGESTED_CASES = 100_000
EXACT_POWER_LIMIT = 1500  # above this many cases the normal approximation is close enough


@dataclass(frozen=True)
class CellPower:
    """A cell's minimum detectable drop (None: no possible drop is detectable) and the cases it needs."""

    min_detectable: float | None
    max_drop: float
    suggested_num_cases: int | None


@dataclass(frozen=True)
class PowerInputs:
    """What the power of one cell's one-sided test depends on."""

    num_pairs: int
    num_good: float  # baseline "good" mass: passes (or harmless answers), or the graded headroom
    num_better: int  # cases the candidate improved on: the noise a rerun alone produces
    better_square_sum: float  # sum of squared improvements (graded noise variance)
    level: float
    power: float
    binary: bool


@functools.lru_cache(maxsize=4096)  # cells of one size and noise share their power (and simulations repeat)
def cell_power(inputs: PowerInputs, min_effect: float) -> CellPower:
    """The drop detectable at ``inputs.level`` with ``inputs.power``; the cases ``min_effect`` needs."""
    n = inputs.num_pairs
    max_drop = inputs.num_good / n if n else 0.0
    if n == 0:
        return CellPower(None, 0.0, None)
    if inputs.binary:
        detectable = _binary_detectable(inputs)
    else:
        detectable = _normal_detectable(inputs)
        detectable = detectable if detectable <= max_drop else None
    return CellPower(detectable, max_drop, _cases_needed(inputs, min_effect))


def mcnemar_power(num_good: int, num_other: int, flip_rate: float, noise_rate: float, level: float) -> float:
    """Power of the one-sided exact McNemar test when each good case turns bad with ``flip_rate``
    and each other case turns good with ``noise_rate``."""
    from scipy import stats

    worse = np.arange(num_good + 1)
    better = np.arange(num_other + 1)
    p_worse = stats.binom.pmf(worse, num_good, min(1.0, flip_rate))
    p_better = stats.binom.pmf(better, num_other, min(1.0, noise_rate))
    critical = critical_worse(num_good + num_other, level)
    rejects = worse[:, None] >= critical[worse[:, None] + better[None, :]]
    return float(p_worse @ rejects.astype(float) @ p_better)


def critical_worse(max_discordant: int, level: float) -> np.ndarray:
    """Per number of discordant pairs m (0..max_discordant), the fewest "worse" pairs the one-sided
    test rejects with (m + 1 when even m of m is not enough)."""
    size = 64
    while size <= max_discordant:
        size *= 2
    return _critical_table(size, level)[: max_discordant + 1]


@functools.lru_cache(maxsize=32)
def _critical_table(size: int, level: float) -> np.ndarray:
    from scipy import stats

    m = np.arange(size)
    critical = stats.binom.ppf(1 - level, m, 0.5).astype(np.int64) + 1
    # ppf works on floating-point quantiles: settle the boundary on the exact tail probabilities
    critical = np.where(stats.binom.sf(critical - 2, m, 0.5) <= level, critical - 1, critical)
    critical = np.where(stats.binom.sf(critical - 1, m, 0.5) > level, critical + 1, critical)
    critical = np.maximum(critical, 1)
    table: np.ndarray = np.where(critical > m, m + 1, critical)
    table.setflags(write=False)
    return table


def _binary_detectable(inputs: PowerInputs) -> float | None:
    n, good = inputs.num_pairs, round(inputs.num_good)
    other = n - good
    noise = inputs.num_better / other if other else 0.0
    expected_noise = inputs.num_better

    def detects(drop_cases: int) -> bool:
        flip = (expected_noise + drop_cases) / good if good else 1.0
        return mcnemar_power(good, other, flip, noise, inputs.level) >= inputs.power

    low, high = 1, good - expected_noise  # a drop of ``good`` cases loses every good case
    if high < 1 or not detects(high):
        return None
    while low < high:
        middle = (low + high) // 2
        if detects(middle):
            high = middle
        else:
            low = middle + 1
    return low / n


def _z(inputs: PowerInputs) -> float:
    from scipy import stats

    return float(stats.norm.isf(inputs.level) + stats.norm.ppf(inputs.power))


def _null_variance(inputs: PowerInputs) -> float:
    # chance improvements mirrored: without a change, worsening and improvement are symmetric
    return 2.0 * inputs.better_square_sum / inputs.num_pairs


def _normal_detectable(inputs: PowerInputs) -> float:
    # smallest d with d * sqrt(n) = z * sqrt(v0 + d - d^2): a drop adds at most a Bernoulli's variance
    n, z2, v0 = inputs.num_pairs, _z(inputs) ** 2, _null_variance(inputs)
    return (z2 + math.sqrt(z2 * z2 + 4 * (n + z2) * z2 * v0)) / (2 * (n + z2))


def _cases_needed(inputs: PowerInputs, effect: float) -> int | None:
    n = inputs.num_pairs
    good_rate = inputs.num_good / n
    noise_per_case = inputs.num_better / n
    if effect <= 0 or effect + noise_per_case > good_rate:
        return None  # the baseline has too little left to lose for such a drop to happen
    v0 = _null_variance(inputs)
    estimate = math.ceil(_z(inputs) ** 2 * (v0 + effect - effect * effect) / (effect * effect))
    if not inputs.binary or estimate > EXACT_POWER_LIMIT:
        return min(max(estimate, 1), MAX_SUGGESTED_CASES)

    def enough(size: int) -> bool:
        good = round(good_rate * size)
        other = size - good
        noise = noise_per_case * size
        flip = (noise + effect * size) / good if good else 1.0
        rate = noise / other if other else 0.0
        return mcnemar_power(good, other, flip, rate, inputs.level) >= inputs.power

    # bracket the exact answer around the normal approximation, then bisect
    low, high = max(1, estimate // 2), max(2, estimate)
    while not enough(high):
        low, high = high, high * 2
        if high > EXACT_POWER_LIMIT:
            return min(high, MAX_SUGGESTED_CASES)
    while low > 1 and enough(low):
        low //= 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high
