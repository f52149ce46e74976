"""Agreement statistics between metric verdicts and human labels (scipy for the bootstrap)."""

from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Agreement:
    """Confusion matrix (positive = the metric's positive class), agreement and Cohen's kappa."""

    n: int
    tp: int
    fp: int
    fn: int
    tn: int
    agreement: float
    kappa: float
    kappa_low: float
    kappa_high: float


def cohen_kappa(predicted: np.ndarray, labels: np.ndarray) -> float:
    """Cohen's kappa of two 0/1 vectors; 1.0 when both agree perfectly on a single class."""
    observed = float(np.mean(predicted == labels))
    p_pred, p_label = float(np.mean(predicted)), float(np.mean(labels))
    chance = p_pred * p_label + (1 - p_pred) * (1 - p_label)
    if chance >= 1.0:
        return 1.0
    return (observed - chance) / (1 - chance)


def agreement(predicted: list[int], labels: list[int], *, resamples: int, seed: int) -> Agreement:
    """Agreement with a 95% percentile bootstrap interval for kappa (rows resampled in pairs)."""
    pred, gold = np.asarray(predicted, dtype=int), np.asarray(labels, dtype=int)
    kappa = cohen_kappa(pred, gold) if len(pred) else float("nan")
    low = high = kappa
    if len(pred) > 1:
        interval = stats.bootstrap(
            (pred, gold), cohen_kappa, paired=True, vectorized=False, n_resamples=resamples,
            confidence_level=0.95, method="percentile", random_state=np.random.default_rng(seed),
        ).confidence_interval  # fmt: skip
        low, high = float(interval.low), float(interval.high)
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
    )
