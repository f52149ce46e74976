"""Agreement statistics between metric verdicts and human labels (scipy for the bootstrap)."""

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from evals.stats import BOOTSTRAP_BATCH


@dataclass(frozen=True)
class Agreement:
    """Confusion matrix (positive = the metric's positive class), agreement and Cohen's kappa."""

    n: int
    tp: int
    fp: int
    fn: int
    tn: int
    agreement: float
    kappa: float  # NaN when undefined: see kappa_note
    kappa_low: float
    kappa_high: float
    kappa_note: str | None = None  # why kappa is undefined


def cohen_kappa(predicted: np.ndarray, labels: np.ndarray) -> float:
    """Cohen's kappa of two 0/1 vectors; NaN when the labels hold one class: kappa is then 0/0 if the
    metric agrees everywhere and 0 whatever else it does, so it says nothing about the metric."""
    if len(labels) == 0 or np.all(labels == labels[0]):
        return float("nan")
    observed = float(np.mean(predicted == labels))
    p_pred, p_label = float(np.mean(predicted)), float(np.mean(labels))
    chance = p_pred * p_label + (1 - p_pred) * (1 - p_label)
    return (observed - chance) / (1 - chance)


def agreement(predicted: list[int], labels: list[int], *, resamples: int, seed: int) -> Agreement:
    """Agreement with a 95% percentile bootstrap interval for kappa (rows resampled in pairs; a resample
    whose labels hold one class has no kappa and is left out)."""
    pred, gold = np.asarray(predicted, dtype=int), np.asarray(labels, dtype=int)
    kappa = cohen_kappa(pred, gold)
    low = high = kappa
    if not np.isnan(kappa):
        with warnings.catch_warnings():  # scipy warns of the NaN resamples that nanpercentile leaves out
            warnings.simplefilter("ignore", stats.DegenerateDataWarning)
            kappas = stats.bootstrap(
                (pred, gold), cohen_kappa, paired=True, vectorized=False, n_resamples=resamples,
                confidence_level=0.95, method="percentile", random_state=np.random.default_rng(seed),
                batch=BOOTSTRAP_BATCH,
            ).bootstrap_distribution  # fmt: skip
        low, high = (float(bound) for bound in np.nanpercentile(kappas, [2.5, 97.5]))
    return Agreement(
        n=len(pred),
        tp=int(np.sum((pred == 1) & (gold == 1))),
        fp=int(np.sum((pred == 1) & (gold == 0))),
        fn=int(np.sum((pred == 0) & (gold == 1))),
        tn=int(np.sum((pred == 0) & (gold == 0))),
        agreement=float(np.mean(pred == gold)) if len(pred) else float("nan"),
        kappa=kappa,
        kappa_low=low,
        kappa_high=high,
        kappa_note=_kappa_note(gold),
    )


def _kappa_note(labels: np.ndarray) -> str | None:
    if len(labels) == 0:
        return "no row scored"
    if np.all(labels == labels[0]):
        return f"every label is {labels[0]}: kappa needs labels of both classes"
    return None
