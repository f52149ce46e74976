"""The four metrics, one module each; ``score_case`` runs the rules, ``score_cases`` adds the judge."""

from collections.abc import Callable, Sequence

from evallens.reports import MetricName
from evals.metrics import accuracy, harmfulness, irrelevance, recall
from evals.metrics.result import (
    Answer,
    JudgeOutcome,
    JudgeRequest,
    MetricResult,
    ScoringContext,
    unscored,
    verdict,
)
from evals.sets.format import CaseSpec

Scorer = Callable[[CaseSpec, Answer, ScoringContext], MetricResult]

SCORERS: dict[MetricName, Scorer] = {
    "accuracy": accuracy.score,
    "irrelevance": irrelevance.score,
    "harmfulness": harmfulness.score,
    "recall": recall.score,
}
JUDGED: tuple[MetricName, ...] = ("accuracy", "irrelevance", "harmfulness")
# what each metric may embed for an answer (recall embeds nothing)
COMPARED: dict[MetricName, Callable[[CaseSpec, Answer], list[str]]] = {
    "accuracy": accuracy.texts_to_compare,
    "irrelevance": irrelevance.texts_to_compare,
    "harmfulness": harmfulness.texts_to_compare,
}


def score_case(case: CaseSpec, answer: Answer, context: ScoringContext) -> dict[MetricName, MetricResult]:
    """Every metric's rules on one answer, by metric name (no judge)."""
    return {name: scorer(case, answer, context) for name, scorer in SCORERS.items()}


def texts_to_embed(
    items: Sequence[tuple[CaseSpec, Answer]], metrics: Sequence[MetricName] | None = None
) -> list[str]:
    """Every text the metrics may compare for these answers, to embed in one batch before scoring: one
    text at a time costs half again as much (a text left out is embedded when it is compared)."""
    wanted = [name for name in metrics or SCORERS if name in COMPARED]
    texts = {text for case, answer in items for name in wanted for text in COMPARED[name](case, answer)}
    return sorted(text for text in texts if text)


def score_cases(
    items: Sequence[tuple[CaseSpec, Answer]],
    context: ScoringContext,
    metrics: Sequence[MetricName] | None = None,
) -> list[dict[MetricName, MetricResult]]:
    """Score many answers; the judge (mode ``judge`` or ``both``) decides its cases in one batch."""
    wanted = list(metrics or SCORERS)
    context.similarity.prepare(texts_to_embed(items, wanted))
    results = [{name: SCORERS[name](case, answer, context) for name in wanted} for case, answer in items]
    if context.judge is None or context.judge_mode == "rules":
        return results
    pending: list[tuple[int, MetricName, JudgeRequest]] = []
    for index, ((case, answer), row) in enumerate(zip(items, results, strict=True)):
        for name in JUDGED:
            result = row.get(name)
            if result is None or not result.applies or answer.failed or not answer.text:
                continue
            if context.judge_mode == "judge" or result.unsure:
                pending.append((index, name, _request(name, case, answer.text)))
    outcomes = context.judge.decide([request for _, _, request in pending])
    for (index, name, _), outcome in zip(pending, outcomes, strict=True):
        results[index][name] = _judged(name, results[index][name], outcome)
    return results


def _request(metric: MetricName, case: CaseSpec, answer: str) -> JudgeRequest:
    return JudgeRequest(
        metric=metric,
        question=case.prompt_text(),
        reference=case.reference_answer or "",
        required_facts=list(case.required_facts),
        expected=case.expected,
        answer=answer,
    )


def _judged(metric: MetricName, rules: MetricResult, outcome: JudgeOutcome) -> MetricResult:
    if outcome.verdict is None:
        return unscored(metric, f"unscored: {outcome.reason}")
    source = "judge (cached)" if outcome.cached else "judge"
    return verdict(metric, outcome.verdict, f"{source}: {outcome.reason} [rules: {rules.reason}]")


__all__ = [
    "JUDGED",
    "SCORERS",
    "Answer",
    "MetricResult",
    "ScoringContext",
    "score_case",
    "score_cases",
    "texts_to_embed",
]
