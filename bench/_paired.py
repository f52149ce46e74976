"""Paired latency figures: two paths asked the same questions one at a time, compared pair by pair."""

import statistics
from dataclasses import dataclass

from scipy.stats import binom

__all__ = ["Difference", "Pair", "paired_difference", "percentile", "print_latency"]

CONFIDENCE = 0.95


@dataclass
class Pair:
    """One question asked of both paths, one after the other: latency and TTFT in seconds per path."""

    latency_s: dict[str, float]
    ttft_s: dict[str, float]
    output_tokens: dict[str, int]


@dataclass
class Difference:
    """The median of paired differences and a distribution-free interval around it."""

    median: float
    low: float
    high: float
    num_pairs: int
    coverage: float  # what the interval covers: CONFIDENCE or more, less only with very few pairs


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile the throughput rows use too."""
    ordered = sorted(values)
    return ordered[int(fraction * (len(ordered) - 1))]


def paired_difference(differences: list[float]) -> Difference:
    """Median of the differences with the sign-test interval for it (order statistics, no assumption
    about the shape: latency tails are long): the narrowest pair of order statistics ``d[j]``,
    ``d[n - 1 - j]`` that holds the true median with probability ``CONFIDENCE`` or more."""
    ordered, n = sorted(differences), len(differences)
    alpha = (1 - CONFIDENCE) / 2
    j = int(binom.ppf(alpha, n, 0.5))  # the first j with P(B <= j) >= alpha: step back below it
    while j >= 0 and binom.cdf(j, n, 0.5) > alpha:
        j -= 1
    j = max(j, 0)  # under 6 pairs even the extremes cover less than CONFIDENCE; say how much
    coverage = 1 - 2 * float(binom.cdf(j, n, 0.5))
    return Difference(statistics.median(ordered), ordered[j], ordered[n - 1 - j], n, coverage)


def print_latency(pairs: list[Pair], first: str, second: str) -> dict[str, Difference]:
    """Per path p50 and p95 of TTFT and latency, then ``first`` minus ``second`` pair by pair."""
    print(f"\nlatency, one request at a time ({len(pairs)} pairs, order alternating):")
    print(f"{'path':>10} {'p50 TTFT':>10} {'p95 TTFT':>10} {'p50 ms':>10} {'p95 ms':>10}")
    for path in (first, second):
        ttfts = [1000 * p.ttft_s[path] for p in pairs]
        latencies = [1000 * p.latency_s[path] for p in pairs]
        row = [percentile(ttfts, 0.5), percentile(ttfts, 0.95)]
        row += [percentile(latencies, 0.5), percentile(latencies, 0.95)]
        print(f"{path:>10} " + " ".join(f"{value:10.1f}" for value in row))
    differences = {
        "TTFT": paired_difference([1000 * (p.ttft_s[first] - p.ttft_s[second]) for p in pairs]),
        "latency": paired_difference([1000 * (p.latency_s[first] - p.latency_s[second]) for p in pairs]),
    }
    print(f"\n{first} minus {second}, pair by pair (ms): median [interval, coverage]")
    for name, d in differences.items():
        print(f"{name:>10} {d.median:+10.1f} [{d.low:+.1f}, {d.high:+.1f}, {d.coverage:.1%}] n={d.num_pairs}")
    return differences
