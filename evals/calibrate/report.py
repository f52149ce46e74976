"""The calibration report: per metric agreement, kappa, worst disagreements; terminal, JSON, Markdown."""

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from evallens.markdown import code, literal
from evals.calibrate.score import ScoredRow
from evals.calibrate.stats import Agreement
from evals.calibrate.thresholds import Suggestion
from evals.metrics.context import LEARNED
from evals.render import write_report_files

NUM_WORST = 5


@dataclass(frozen=True)
class Disagreement:
    """A row the metric got wrong, with its reason."""

    id: str
    label: int
    predicted: int
    reason: str
    question: str
    response: str


@dataclass
class MetricCalibration:
    """One metric against the labels."""

    metric: str
    agreement: Agreement
    num_unscored: int
    worst: list[Disagreement]
    suggestion: Suggestion | None = None


@dataclass
class CalibrationReport:
    """Every metric of one label file."""

    labels_path: str
    judge_mode: str
    thresholds: dict[str, float]
    # per metric with a classifier: where the one that scored it is (None: the rules alone), and why not
    classifiers: dict[str, str | None] = field(default_factory=dict)
    classifiers_off: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, MetricCalibration] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` document: ``{"metrics": {name: {"n", "kappa", "kappa_low", ...}}, ...}``."""
        metrics = {}
        for name, item in self.metrics.items():
            stats = item.agreement
            metrics[name] = {
                "n": stats.n,
                "kappa": _number(stats.kappa),
                "kappa_low": _number(stats.kappa_low),
                "kappa_high": _number(stats.kappa_high),
                "kappa_note": stats.kappa_note,
                "agreement": _number(stats.agreement),
                "confusion": {"tp": stats.tp, "fp": stats.fp, "fn": stats.fn, "tn": stats.tn},
                "unscored": item.num_unscored,
                "worst": [asdict(row) for row in item.worst],
            }
            if item.suggestion is not None:
                metrics[name]["suggestion"] = _suggestion_json(item.suggestion)
        document: dict[str, Any] = {
            "labels": self.labels_path, "judge_mode": self.judge_mode, "thresholds": self.thresholds
        }  # fmt: skip
        for metric, learned in LEARNED.items():  # "harm_classifier", "harm_classifier_off", ...
            document[learned.key] = self.classifiers.get(metric)
            document[f"{learned.key}_off"] = self.classifiers_off.get(metric)
        return document | {"metrics": metrics}


def metric_calibration(metric: str, scored: list[ScoredRow], stats: Agreement) -> MetricCalibration:
    """Bundle one metric's statistics with its worst disagreements (confident ones first)."""
    wrong = [s for s in scored if s.predicted is not None and s.predicted != s.row.label]
    wrong.sort(key=lambda s: (s.unsure, s.row.line))
    worst = [
        Disagreement(s.row.name, s.row.label, s.predicted or 0, s.reason, s.row.question, s.row.response)
        for s in wrong[:NUM_WORST]
    ]
    unscored = sum(1 for s in scored if s.predicted is None)
    return MetricCalibration(metric, stats, unscored, worst)


def print_calibration(report: CalibrationReport, console: Console) -> None:
    """The per-metric table, the worst disagreements and any threshold suggestions."""
    table = Table(title=f"calibration against {report.labels_path} ({_scorers(report)})")
    for column in ("metric", "n", "TP", "FP", "FN", "TN", "agreement", "kappa [95% CI]", "unscored"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for name, item in report.metrics.items():
        s = item.agreement
        interval = f"{_fmt(s.kappa)} [{_fmt(s.kappa_low)}, {_fmt(s.kappa_high)}]"
        if s.kappa_note is not None:
            interval = f"n/a ({s.kappa_note})"
        table.add_row(name, str(s.n), str(s.tp), str(s.fp), str(s.fn), str(s.tn), _fmt(s.agreement), interval,
                      str(item.num_unscored))  # fmt: skip
    console.print(table)
    for note in _rules_alone(report):
        console.print(note, markup=False, highlight=False)
    for name, item in report.metrics.items():
        if item.worst:
            console.print(f"\n[bold]{name}[/bold]: most wrong (label -> metric)", highlight=False)
        for row in item.worst:
            console.print(f"  {row.id}: {row.label} -> {row.predicted}: {row.reason}", markup=False)
            console.print(f"      answer: {_excerpt(row.response)}", markup=False)
    for name, item in report.metrics.items():
        if item.suggestion is not None:
            console.print(_suggestion_line(name, item.suggestion), markup=False)


def _scorers(report: CalibrationReport) -> str:
    states = [
        f"{learned.kind.title}: {'on' if report.classifiers.get(metric) else 'off'}"
        for metric, learned in LEARNED.items()
    ]
    return ", ".join([f"judge mode: {report.judge_mode}", *states])


def _rules_alone(report: CalibrationReport) -> list[str]:
    """Why a metric went without its classifier, which agrees better with reviewers
    (docs/calibration.md); nothing for a metric that had it or was not scored."""
    notes = []
    for metric, learned in LEARNED.items():
        off = report.classifiers_off.get(metric)
        if off is not None and metric in report.metrics:
            notes.append(f"{metric} was scored by the rules alone: {learned.kind.title} off ({off})")
    return notes


def write_calibration(report: CalibrationReport, directory: Path) -> None:
    """``calibration.json`` and ``calibration.md`` in ``directory``."""
    lines = [
        f"# Calibration: {report.labels_path}",
        "",
        f"Scored with: {_scorers(report)}.",
        "",
        *(line for note in _rules_alone(report) for line in (f"{note}.", "")),
        "| metric | n | TP | FP | FN | TN | agreement | kappa | 95% CI | unscored |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, item in report.metrics.items():
        s = item.agreement
        interval = f"[{_fmt(s.kappa_low)}, {_fmt(s.kappa_high)}]"
        kappa = _fmt(s.kappa) if s.kappa_note is None else f"n/a ({s.kappa_note})"
        lines.append(
            f"| {name} | {s.n} | {s.tp} | {s.fp} | {s.fn} | {s.tn} | {_fmt(s.agreement)} | {kappa} | "
            f"{interval} | {item.num_unscored} |"
        )
    for name, item in report.metrics.items():
        if item.worst:
            lines += ["", f"## {name}: most wrong", ""]
            lines += [
                f"- {code(r.id)} label {r.label}, metric {r.predicted}: {literal(r.reason)}"
                for r in item.worst
            ]
        if item.suggestion is not None:
            lines += ["", _suggestion_line(name, item.suggestion)]
    write_report_files(
        directory,
        {
            "calibration.json": json.dumps(report.as_json(), indent=2) + "\n",
            "calibration.md": "\n".join(lines) + "\n",
        },
    )


def _suggestion_json(suggestion: Suggestion) -> dict[str, Any]:
    cv = suggestion.cross_validated
    return {
        "current": suggestion.current,
        "suggested": suggestion.suggested,
        "folds": suggestion.folds,
        "fold_choices": suggestion.fold_choices,
        "cross_validated": {"n": cv.n, "kappa": _number(cv.kappa), "kappa_low": _number(cv.kappa_low),
                            "kappa_high": _number(cv.kappa_high), "kappa_note": cv.kappa_note,
                            "agreement": _number(cv.agreement)},
    }  # fmt: skip


def _suggestion_line(name: str, suggestion: Suggestion) -> str:
    cv = suggestion.cross_validated
    chosen = ", ".join(f"{key}={value:g}" for key, value in suggestion.suggested.items())
    current = ", ".join(f"{key}={value:g}" for key, value in suggestion.current.items())
    return (
        f"{name}: suggested {chosen} (now {current}); {suggestion.folds}-fold cross-validated kappa "
        f"{_fmt(cv.kappa)} [{_fmt(cv.kappa_low)}, {_fmt(cv.kappa_high)}], agreement {_fmt(cv.agreement)} "
        f"(rules only, each row scored with thresholds tuned on the other folds)"
    )


def _number(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def _fmt(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 140 else flat[:137] + "..."
