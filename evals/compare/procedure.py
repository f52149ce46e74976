"""The gate's multiplicity procedure: a verdict on the overall cells, then scenarios for localisation.

Closed testing, per metric, over the hypotheses "scenario s did not get worse". The intersection of a
union of scenarios is tested by the smaller of two tests, each at half the level: the pooled paired
test on all the union's cases (strong when a drop is spread out, or when the rest is quiet) and
Bonferroni over the union's own scenario tests (strong when one scenario drops amid noise elsewhere).
Scenario tests use disjoint cases, and a scenario's own test is the singleton union.

1. Verdict: the union of all scenarios is the metric's overall cell. Holm over the metrics' overall
   cells controls the family-wise error rate of "metric X got worse" at alpha.
2. Localisation: a scenario is flagged only when every union containing it is significant, so its
   adjusted p is the largest of those unions' p-values and of its metric's Holm-adjusted overall p.
   This keeps each metric's family-wise error rate at alpha without dividing alpha by the number of
   cells: a drop confined to one scenario stays visible in every union that contains it.

Past ``MAX_CLOSED_SCENARIOS`` scenarios (2^k unions) proper unions are tested by Bonferroni alone,
which makes step 2 Holm whose widest step is the overall cell.
"""

from collections.abc import Callable, Sequence

import numpy as np

from evals.stats import holm

PROCEDURE = "hierarchical"
ERROR_RATE = (
    "verdict: the chance of failing a change that made no metric worse is at most alpha (Holm over the "
    "overall cells, one-sided paired tests); scenarios: for each metric, the chance of flagging any "
    "scenario that did not get worse is at most alpha (closed testing entered through the metric's "
    "overall cell)"
)
MAX_CLOSED_SCENARIOS = 10
POOLED_SHARE = 0.5  # of each union's level, for the pooled test; the rest for Bonferroni over scenarios

PooledTest = Callable[[np.ndarray], float]


def adjust_overall(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values of the overall cells (one per metric), in input order."""
    return holm(p_values)


def union_p(pooled_p: float, scenario_ps: Sequence[float]) -> float:
    """p of "no scenario of this union got worse": pooled test or Bonferroni, at half the level each."""
    if len(scenario_ps) <= 1:
        return pooled_p
    bonferroni = len(scenario_ps) * min(scenario_ps)
    return min(1.0, pooled_p / POOLED_SHARE, bonferroni / (1 - POOLED_SHARE))


def adjust_scenarios(
    overall_adjusted: float,
    worsening: dict[str, np.ndarray],
    raw_p: dict[str, float],
    pooled_test: PooledTest,
) -> dict[str, float]:
    """Closed-testing adjusted p-values of one metric's scenarios.

    ``worsening`` holds each scenario's per-case worsening and ``raw_p`` its own test's p-value;
    ``pooled_test`` tests a union of scenarios from their concatenated worsening.
    """
    names = sorted(worsening)
    if len(names) <= 1:
        return {name: max(overall_adjusted, raw_p[name]) for name in names}
    if len(names) > MAX_CLOSED_SCENARIOS:
        return _bonferroni_shortcut(overall_adjusted, raw_p)
    worst = dict.fromkeys(names, 0.0)
    for mask in range(1, 2 ** len(names) - 1):  # every proper, nonempty union
        members = [name for bit, name in enumerate(names) if mask >> bit & 1]
        pooled = (
            raw_p[members[0]]
            if len(members) == 1
            else pooled_test(np.concatenate([worsening[name] for name in members]))
        )
        p = union_p(pooled, [raw_p[name] for name in members])
        for name in members:
            worst[name] = max(worst[name], p)
    return {name: min(1.0, max(overall_adjusted, worst[name])) for name in names}


def _bonferroni_shortcut(overall_adjusted: float, raw_p: dict[str, float]) -> dict[str, float]:
    """Closed testing with Bonferroni on proper unions: Holm whose widest step is the overall cell."""
    k = len(raw_p)
    order = sorted(raw_p, key=raw_p.__getitem__)
    adjusted: dict[str, float] = {}
    running = overall_adjusted
    for rank, name in enumerate(order):
        running = max(running, min(1.0, min(k - 1, k - rank) * raw_p[name]))
        adjusted[name] = running
    return adjusted
