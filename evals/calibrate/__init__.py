"""``evallens eval calibrate``: how well the metrics agree with hand-labelled answers."""

from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from evallens.progress import NO_PROGRESS, ProgressReporter, phase
from evallens.settings import CasesSettings, EvalSettings
from evals._db import open_sessions
from evals.calibrate.labels import LabelRow, load_labels
from evals.calibrate.report import CalibrationReport, metric_calibration, print_calibration, write_calibration
from evals.calibrate.score import score_rows
from evals.calibrate.stats import agreement
from evals.calibrate.thresholds import GRIDS, suggest_thresholds
from evals.errors import CalibrationError
from evals.metrics.context import LEARNED, Learned, build_scoring_context, judge_mode
from evals.metrics.result import ScoringContext, Similarity

FOLDS = 5
_UNTRAINED = "not trained yet: `evallens model pull` trains it once (its --help says how long)"


def calibrate(
    labels_path: Path,
    *,
    settings: EvalSettings | None = None,
    suggest: bool = False,
    similarity: Similarity | None = None,
    progress: ProgressReporter = NO_PROGRESS,
) -> CalibrationReport:
    """Score every labelled row and compare with the labels, per metric (and suggest thresholds)."""
    settings = settings or EvalSettings()
    rows = load_labels(labels_path)
    if suggest:
        _require_rows_per_fold(labels_path, rows)
    mode = judge_mode(settings)
    with ExitStack() as stack:
        sessions = stack.enter_context(open_sessions()) if mode != "rules" else None
        # verdicts cached for the project every eval command uses (evals.commands.configured_project)
        context = build_scoring_context(settings, similarity, sessions, project=CasesSettings().cases_project)
        return _report(labels_path, rows, context, settings, suggest, progress)


def _require_rows_per_fold(path: Path, rows: list[LabelRow]) -> None:
    """Each fold is tuned on the other folds' rows: with fewer rows than folds, one has none to tune on."""
    counts = Counter(row.metric for row in rows)
    short = [f"{metric} has {count}" for metric, count in counts.items() if count < FOLDS]
    if short:
        raise CalibrationError(
            f"{path}: suggesting thresholds ({FOLDS}-fold cross-validation) needs at least {FOLDS} labelled "
            f"rows per metric: {', '.join(short)}"
        )


def _report(
    path: Path,
    rows: list[LabelRow],
    context: ScoringContext,
    settings: EvalSettings,
    suggest: bool,
    progress: ProgressReporter,
) -> CalibrationReport:
    scored = score_rows(rows, context, progress)
    thresholds = {name: float(getattr(context, name)) for grid in GRIDS.values() for name in grid}
    report = CalibrationReport(str(path), context.judge_mode, thresholds)
    for learned_metric, learned in LEARNED.items():
        if getattr(context, learned.key) is not None:
            report.classifiers[learned_metric] = str(learned.path(settings))
        else:
            report.classifiers_off[learned_metric] = _off(learned, settings)
    resamples, seed = settings.eval_bootstrap_resamples, settings.eval_seed
    for metric in GRIDS:
        mine = [s for s in scored if s.row.metric == metric]
        if not mine:
            continue
        decided = [s for s in mine if s.predicted is not None]
        stats = agreement(
            [s.predicted or 0 for s in decided],
            [s.row.label for s in decided],
            resamples=resamples,
            seed=seed,
        )
        report.metrics[metric] = metric_calibration(metric, mine, stats)
        if suggest:
            with phase(progress, f"suggesting {metric} thresholds ({FOLDS}-fold cross-validation)"):
                report.metrics[metric].suggestion = suggest_thresholds(
                    metric, [s.row for s in mine], context, folds=FOLDS, resamples=resamples, seed=seed
                )
    return report


def _off(learned: Learned, settings: EvalSettings) -> str:
    """Why a classifier did not score: switched off, or not trained yet."""
    return f"{learned.kind.setting} is false" if not learned.enabled(settings) else _UNTRAINED


__all__ = ["CalibrationReport", "calibrate", "print_calibration", "write_calibration"]
