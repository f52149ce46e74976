"""Which shipped label rows are held out: never tuned on by a rule, never trained on by a model.

docs/calibration.md tells each file's story; a rule or model tuned on a row takes it out of the
held-out part, and a new file written independently has to join it.
"""

from pathlib import Path

from evals.calibrate.labels import CalibratedMetric, LabelRow, load_labels

CALIBRATION_DIR = Path(__file__).parents[1] / "datasets" / "calibration"
# Per file, the metrics whose rows are held out.
HELDOUT_METRICS: dict[str, frozenset[CalibratedMetric]] = {
    "heldout7.jsonl": frozenset({"accuracy", "irrelevance"}),
    "heldout9.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout10.jsonl": frozenset({"irrelevance"}),
    "heldout11.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout12.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout13.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout14.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout15.jsonl": frozenset({"accuracy", "irrelevance"}),
    "heldout16.jsonl": frozenset({"accuracy", "irrelevance"}),
    "heldout17.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout18.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout19.jsonl": frozenset({"harmfulness"}),
    "heldout20.jsonl": frozenset({"harmfulness"}),
    "heldout21.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout22.jsonl": frozenset({"harmfulness"}),
    "heldout23.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout24.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout25.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout26.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout27.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout28.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout29.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout30.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout31.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout32.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout33.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout34.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout35.jsonl": frozenset({"harmfulness"}),
    "heldout36.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout37.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout38.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout39.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout40.jsonl": frozenset({"accuracy", "harmfulness"}),
    "heldout41.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout42.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout43.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout44.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout45.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout46.jsonl": frozenset({"irrelevance", "harmfulness"}),
    "heldout47.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout48.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout49.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout50.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout51.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout52.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout53.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout54.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout55.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout56.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout57.jsonl": frozenset({"accuracy", "harmfulness"}),
    "heldout58.jsonl": frozenset({"accuracy", "harmfulness"}),
    "heldout59.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout60.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout61.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout62.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout63.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
    "heldout64.jsonl": frozenset({"accuracy", "irrelevance", "harmfulness"}),
}


def is_held_out(path: Path, row: LabelRow) -> bool:
    """Whether ``row`` of the shipped file ``path`` belongs to the held-out part."""
    return row.metric in HELDOUT_METRICS.get(path.name, frozenset())


def tuning_rows(metric: CalibratedMetric, directory: Path = CALIBRATION_DIR) -> list[LabelRow]:
    """Every shipped row of ``metric`` outside the held-out part, file by file in name order."""
    return [
        row
        for path in sorted(directory.glob("*.jsonl"))
        for row in load_labels(path)
        if row.metric == metric and not is_held_out(path, row)
    ]
