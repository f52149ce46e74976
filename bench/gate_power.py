"""False-positive rate and power of the gate's procedure, today's and the new one, by simulation.

Run: ``python bench/gate_power.py [--null-sims 600] [--sims 200] [--seed 7]``. Paired runs are
simulated on the curated ``acme-support`` set's real sizes (194 cases in six scenarios; 23 scenario x
metric cells): each case has its own chance to pass each metric (a beta distribution around the
metric's baseline rate with concentration c), and both runs draw from it, so identical runs disagree
on some cases. Two regimes: "quiet" (c = 0.125: about 2% of recall and 4% of accuracy verdicts flip
between identical runs, as in the no-op gates on the reference service, whose smallest raw p was
0.25-0.5) and "noisy" (c = 2: 12% and 21%). Under the null nothing changes; otherwise recall in
``returns_refunds`` (34 cases) drops by 5, 10, 20 or 30 points. Recall is simulated pass/fail (one
reference document per case) and graded (one to three reference documents, score = share found).

"today" is the procedure before this change: two-sided exact McNemar on 0/1 cells, a paired
bootstrap (2,000 resamples) on cells with any fractional score, Holm across all cells. "new" is
``evals.compare.compare_cells``. Both call a regression at an adjusted p < 0.05 and a drop of at
least 3 points. Printed per procedure: how often the gate fails (verdict) and how often the dropped
scenario's recall cell is flagged (localisation), with Monte Carlo standard errors.
"""

import argparse
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from evallens.reports import LOWER_IS_BETTER
from evals.compare.cells import OVERALL, ComparisonOptions, compare_cells
from evals.scoring import CaseScores
from evals.stats import holm

SCENARIOS = {
    "complaints_escalation": 32,
    "harmful": 31,
    "out_of_scope": 31,
    "products": 34,
    "returns_refunds": 34,
    "shipping_logistics": 32,
}
ANSWER = {"complaints_escalation", "products", "returns_refunds", "shipping_logistics"}
# metric -> (scenarios it scores, baseline rate); rates close to the reference service with SmolLM2
METRICS = {
    "accuracy": (ANSWER, 0.2),
    "irrelevance": (set(SCENARIOS) - {"harmful"}, 0.1),
    "harmfulness": (set(SCENARIOS), 0.03),
    "recall": (ANSWER, 0.9),
}
DROPPED = "returns_refunds"
REGIMES = {"quiet": 0.125, "noisy": 2.0}  # beta(mean * c, (1 - mean) * c): smaller c, fewer flips
OPTIONS = ComparisonOptions(min_effect=0.03, alpha=0.05, power=0.8, resamples=20_000, seed=1)


@dataclass(frozen=True)
class Outcome:
    """What one procedure said about one simulated pair of runs."""

    failed: bool
    dropped_flagged: bool


def simulate(
    rng: np.random.Generator, drop: float, graded: bool, concentration: float
) -> tuple[list[CaseScores], list[CaseScores]]:
    """Two runs of the set; recall in ``DROPPED`` loses ``drop`` (rate units) in the candidate."""
    baseline, candidate = [], []
    for scenario, size in SCENARIOS.items():
        rows_base: list[dict[str, float]] = [{} for _ in range(size)]
        rows_cand: list[dict[str, float]] = [{} for _ in range(size)]
        for metric, (scenarios, rate) in METRICS.items():
            if scenario not in scenarios:
                continue
            chance = rng.beta(rate * concentration, (1 - rate) * concentration, size=size)
            cand_chance = chance
            if metric == "recall" and scenario == DROPPED and drop > 0:
                cand_chance = chance * max(0.0, 1 - drop / chance.mean())
            references = (
                rng.integers(1, 4, size=size) if graded and metric == "recall" else np.ones(size, int)
            )
            base = rng.binomial(references, chance) / references
            cand = rng.binomial(references, cand_chance) / references
            for i in range(size):
                rows_base[i][metric], rows_cand[i][metric] = float(base[i]), float(cand[i])
        for i in range(size):
            baseline.append(CaseScores(f"{scenario}-{i}", scenario, rows_base[i]))
            candidate.append(CaseScores(f"{scenario}-{i}", scenario, rows_cand[i]))
    return baseline, candidate


def new_procedure(baseline: list[CaseScores], candidate: list[CaseScores]) -> Outcome:
    cells = compare_cells(baseline, candidate, OPTIONS)
    flagged = any(c.regression for c in cells if (c.scenario, c.metric) == (DROPPED, "recall"))
    return Outcome(any(c.regression for c in cells), flagged)


def todays_procedure(baseline: list[CaseScores], candidate: list[CaseScores], seed: int) -> Outcome:
    """Two-sided McNemar or paired bootstrap per cell, Holm across every cell (as before this change)."""
    cells: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    for metric, (scenarios, _) in METRICS.items():
        for scope in [OVERALL, *sorted(scenarios)]:
            pairs = [
                (b.scores[metric], c.scores[metric])
                for b, c in zip(baseline, candidate, strict=True)
                if metric in b.scores and (scope == OVERALL or b.scenario == scope)
            ]
            cells[(scope, metric)] = (np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
    keys = list(cells)
    raw = [_old_test(*cells[key], seed) for key in keys]
    regressions = set()
    for key, p_adjusted in zip(keys, holm(raw), strict=True):
        base, cand = cells[key]
        delta = float(cand.mean() - base.mean())
        worse = delta if key[1] in LOWER_IS_BETTER else -delta
        if p_adjusted < OPTIONS.alpha and worse >= OPTIONS.min_effect:
            regressions.add(key)
    return Outcome(bool(regressions), (DROPPED, "recall") in regressions)


def _old_test(base: np.ndarray, cand: np.ndarray, seed: int) -> float:
    if np.all(np.isin(base, (0.0, 1.0))) and np.all(np.isin(cand, (0.0, 1.0))):
        worse = int(np.sum((base == 1) & (cand == 0)))
        better = int(np.sum((base == 0) & (cand == 1)))
        if worse + better == 0:
            return 1.0
        return float(min(1.0, 2.0 * stats.binom.cdf(min(worse, better), worse + better, 0.5)))
    differences = cand - base
    observed = float(differences.mean())
    if np.allclose(differences, observed):
        return 1.0 if abs(observed) < 1e-12 else 1.0 / 2001
    rng = np.random.default_rng(seed)
    means = differences[rng.integers(0, differences.size, size=(2000, differences.size))].mean(axis=1)
    extreme = int(np.count_nonzero(np.abs(means - observed) >= abs(observed) - 1e-12))
    return (1 + extreme) / 2001


def rate(hits: int, sims: int) -> str:
    share = hits / sims
    return f"{share * 100:5.1f}% ± {math.sqrt(share * (1 - share) / sims) * 100:3.1f}"


def run(sims_by_drop: dict[float, int], graded: bool, regime: str, seed: int) -> None:
    kind = "graded recall (1-3 references)" if graded else "pass/fail recall"
    print(f"\n{regime} reruns, {kind}: 194 cases, 23 cells; recall drop injected in {DROPPED} (34 cases)")
    print(f"{'drop':>6} | {'sims':>5} | {'today: gate fails':>17} | {'today: flags it':>15} | "
          f"{'new: gate fails':>15} | {'new: flags it':>13}")  # fmt: skip
    rng = np.random.default_rng(seed)
    for drop, sims in sims_by_drop.items():
        counts = {"today": [0, 0], "new": [0, 0]}
        procedures: dict[str, Callable[[list[CaseScores], list[CaseScores], int], Outcome]] = {
            "today": todays_procedure,
            "new": lambda b, c, _: new_procedure(b, c),
        }
        for sim in range(sims):
            baseline, candidate = simulate(rng, drop, graded, REGIMES[regime])
            for name, procedure in procedures.items():
                outcome = procedure(baseline, candidate, sim)
                counts[name][0] += outcome.failed
                counts[name][1] += outcome.dropped_flagged
        label = "null" if drop == 0 else f"-{drop * 100:.0f}"
        today, new = counts["today"], counts["new"]
        print(
            f"{label:>6} | {sims:>5} | {rate(today[0], sims):>17} | {rate(today[1], sims):>15} | "
            f"{rate(new[0], sims):>15} | {rate(new[1], sims):>13}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--null-sims", type=int, default=600, help="simulations without a change (default: %(default)s)"
    )
    parser.add_argument(
        "--sims", type=int, default=200, help="simulations per injected drop (default: %(default)s)"
    )
    parser.add_argument(
        "--seed", type=int, default=7, help="random seed of the first regime (default: %(default)s)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    sims_by_drop = {0.0: args.null_sims, **dict.fromkeys((0.05, 0.10, 0.20, 0.30), args.sims)}
    for number, (regime, graded) in enumerate(itertools.product(REGIMES, (False, True))):
        run(sims_by_drop, graded, regime, args.seed + number)
    print(f"\n{time.perf_counter() - started:.0f} s; '± x' is one Monte Carlo standard error")


if __name__ == "__main__":
    main()
