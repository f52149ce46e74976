"""Score labelled rows with the configured metrics (and judge), each row for its own metric only."""

from collections import defaultdict
from dataclasses import dataclass

from evallens.progress import NO_PROGRESS, ProgressReporter, phase
from evallens.reports import MetricName
from evals.calibrate.labels import LabelRow
from evals.metrics import score_cases, texts_to_embed
from evals.metrics.result import ScoringContext


@dataclass(frozen=True)
class ScoredRow:
    """A labelled row and the metric's verdict on it (``predicted`` None: the judge left it unscored)."""

    row: LabelRow
    predicted: int | None
    reason: str
    unsure: bool


def score_rows(
    rows: list[LabelRow], context: ScoringContext, progress: ProgressReporter = NO_PROGRESS
) -> list[ScoredRow]:
    """Every row's verdict, in the order of ``rows``; ``progress`` sees the embedding, then the rows
    scored (a metric's rows at once, after its judge calls if any)."""
    by_metric: dict[MetricName, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_metric[row.metric].append(index)
    items = {metric: [(rows[i].case(), rows[i].answer()) for i in mine] for metric, mine in by_metric.items()}
    texts = {text for metric, mine in items.items() for text in texts_to_embed(mine, [metric])}
    with phase(progress, f"embedding {len(texts)} texts with MiniLM"):
        context.similarity.prepare(texts)
    scored: dict[int, ScoredRow] = {}
    with phase(progress, "scoring labelled answers", len(rows)):
        for metric, indices in by_metric.items():
            for index, results in zip(indices, score_cases(items[metric], context, [metric]), strict=True):
                result = results[metric]
                predicted = None if result.score is None else int(result.score >= 0.5)
                scored[index] = ScoredRow(rows[index], predicted, result.reason, result.unsure)
                progress.advance(failed=predicted is None, detail=metric)
    return [scored[index] for index in range(len(rows))]
