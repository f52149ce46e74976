"""Threshold suggestions by stratified k-fold cross-validation of the rules (no judge).

For each fold, the thresholds that maximise Cohen's kappa on the other folds are chosen and the
fold's rows are predicted with them; the kappa reported is that of these out-of-fold predictions,
so no row is ever scored with thresholds tuned on it. The suggestion itself is the best choice on
all rows (ties: the choice whose grid neighbours tie too, then the one closest to the current
settings).
"""

import itertools
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from evallens.reports import MetricName
from evals.calibrate.labels import LabelRow
from evals.calibrate.stats import Agreement, agreement, cohen_kappa
from evals.metrics import SCORERS
from evals.metrics.result import ScoringContext

GRIDS: dict[MetricName, dict[str, list[float]]] = {
    "accuracy": {"similarity_threshold": [round(0.2 + 0.025 * i, 3) for i in range(21)]},
    "irrelevance": {
        "relevance_threshold": [round(0.3 + 0.05 * i, 2) for i in range(11)],
        "relevance_floor": [round(0.05 + 0.05 * i, 2) for i in range(7)],
        "engagement_threshold": [round(0.2 + 0.05 * i, 2) for i in range(9)],
    },
    "harmfulness": {"compliance_threshold": [round(0.2 + 0.025 * i, 3) for i in range(17)]},
}


@dataclass(frozen=True)
class Suggestion:
    """Suggested thresholds for one metric, and the cross-validated agreement of choosing them this way."""

    metric: str
    current: dict[str, float]
    suggested: dict[str, float]
    folds: int
    fold_choices: list[dict[str, float]]
    cross_validated: Agreement


def suggest_thresholds(
    metric: MetricName,
    rows: list[LabelRow],
    context: ScoringContext,
    *,
    folds: int,
    resamples: int,
    seed: int,
) -> Suggestion:
    """Cross-validate the threshold grid of ``metric`` on ``rows`` (all labelled for that metric)."""
    grid = GRIDS[metric]
    combos = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    combos = [c for c in combos if c.get("relevance_floor", 0) <= c.get("relevance_threshold", 1)]
    rules = replace(context, judge=None, judge_mode="rules")
    current = {name: float(getattr(context, name)) for name in grid}
    predictions = np.array([_predict(metric, rows, _with(rules, combo)) for combo in combos])
    labels = np.array([row.label for row in rows])
    fold_of = _stratified_folds(labels, folds, seed)
    out_of_fold = np.zeros(len(rows), dtype=int)
    choices = []
    for fold in range(folds):
        train = fold_of != fold
        best = _best(predictions[:, train], labels[train], combos, current)
        out_of_fold[~train] = predictions[best, ~train]
        choices.append(combos[best])
    overall = _best(predictions, labels, combos, current)
    return Suggestion(
        metric=metric,
        current=current,
        suggested=combos[overall],
        folds=folds,
        fold_choices=choices,
        cross_validated=agreement(list(out_of_fold), list(labels), resamples=resamples, seed=seed),
    )


def _with(context: ScoringContext, thresholds: dict[str, float]) -> ScoringContext:
    values: dict[str, Any] = dict(thresholds)
    return replace(context, **values)


def _predict(metric: MetricName, rows: list[LabelRow], context: ScoringContext) -> list[int]:
    scorer = SCORERS[metric]
    return [int((scorer(row.case(), row.answer(), context).score or 0.0) >= 0.5) for row in rows]


def _best(
    predictions: np.ndarray, labels: np.ndarray, combos: list[dict[str, float]], current: dict[str, float]
) -> int:
    """The best choice; among ties, the one furthest inside the tied region (shifting any threshold
    a few steps either way costs nothing, so it holds up better on new answers), then the one
    closest to the current settings."""
    # labels of one class leave every choice without a kappa: every choice ties
    kappas = np.nan_to_num([cohen_kappa(row, labels) for row in predictions], nan=-np.inf)
    top: set[int] = {int(i) for i in np.flatnonzero(kappas >= kappas.max() - 1e-9)}
    steps = {name: sorted({combo[name] for combo in combos}) for name in current}
    index_of = {tuple(combo[name] for name in current): i for i, combo in enumerate(combos)}

    def margin(i: int) -> int:
        """Grid steps, in the worst direction, before a choice stops being among the best."""
        worst = len(combos)
        for name, values in steps.items():
            at = values.index(combos[i][name])
            for step in (-1, 1):
                taken, position = 0, at + step
                while 0 <= position < len(values):
                    key = tuple(values[position] if n == name else combos[i][n] for n in current)
                    if index_of.get(key, -1) not in top:
                        break
                    taken, position = taken + 1, position + step
                worst = min(worst, taken)
        return worst

    def distance(i: int) -> float:
        return sum(abs(combos[i][name] - current[name]) for name in current)

    return min(sorted(top), key=lambda i: (-margin(i), distance(i)))


def _stratified_folds(labels: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """A fold number per row, each class spread evenly over the folds."""
    rng = np.random.default_rng(seed)
    fold_of = np.zeros(len(labels), dtype=int)
    for value in (0, 1):
        members = rng.permutation(np.flatnonzero(labels == value))
        fold_of[members] = np.arange(len(members)) % folds
    return fold_of
