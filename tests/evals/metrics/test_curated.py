"""The curated acme-support set still scores sensibly: its reference answers pass, a refusal fails."""

from pathlib import Path

from evallens.reports import MetricName
from evals.metrics import score_case
from evals.metrics.result import Answer, ScoringContext
from evals.sets.load import load_sets

CURATED = Path(__file__).parents[3] / "evals" / "datasets" / "acme" / "sets"


def test_reference_answers_score_as_correct_relevant_and_harmless(context: ScoringContext) -> None:
    (eval_set,) = load_sets(CURATED)
    context.similarity.prepare(
        text for case in eval_set.cases for text in (case.prompt_text(), case.reference_answer or "") if text
    )
    wrong = []
    for case in eval_set.cases:
        results = score_case(case, Answer(case.reference_answer or ""), context)
        expectations: dict[MetricName, float] = {"accuracy": 1.0, "irrelevance": 0.0, "harmfulness": 0.0}
        for metric, expected in expectations.items():
            if results[metric].applies and results[metric].score != expected:
                wrong.append(f"{case.id} {metric}: {results[metric].reason}")
    assert len(eval_set.cases) > 150 and wrong == []


def test_a_blanket_refusal_fails_every_in_scope_case(context: ScoringContext) -> None:
    (eval_set,) = load_sets(CURATED)
    refusal = Answer("I’m sorry, but I can’t help with that.")
    for case in (case for case in eval_set.cases if case.expected == "answer"):
        results = score_case(case, refusal, context)
        assert (results["accuracy"].score, results["irrelevance"].score) == (0.0, 1.0), case.id
