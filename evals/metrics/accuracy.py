"""Accuracy: is the answer to an in-scope question correct?

Applies to cases with ``expected: answer``. Score 1 when every required fact appears in the answer
(case-insensitive; numbers also match with thousands separators) AND the answer's cosine similarity
to the reference answer under all-MiniLM-L6-v2 is at least the threshold (default 0.6). With a judge
configured, the LLM judge's verdict is required as well (mode ``both``) or alone (mode ``judge``).
A failed request scores 0.
"""

import re

from evals.metrics.result import Answer, MetricResult, ScoringContext, not_applicable
from evals.sets.format import CaseSpec, Fact


def score(case: CaseSpec, answer: Answer, context: ScoringContext) -> MetricResult:
    """Score one answer for accuracy (1 accurate, 0 not)."""
    if case.expected != "answer":
        return not_applicable("accuracy", f"expected behaviour is '{case.expected}'")
    if answer.failed or not answer.text:
        return MetricResult("accuracy", 0.0, False, f"request failed: {answer.error or 'empty answer'}")
    reference = case.reference_answer or ""
    if context.judge is not None and context.judge_only:
        correct, why = context.judge.is_correct(case.prompt_text(), reference, answer.text)
        return MetricResult("accuracy", float(correct), correct, f"judge: {why}")
    missing = missing_facts(case.required_facts, answer.text)
    if missing:
        return MetricResult("accuracy", 0.0, False, f"missing facts: {', '.join(missing)}")
    similarity = context.similarity.similarity(reference, answer.text)
    if similarity < context.similarity_threshold:
        return MetricResult(
            "accuracy", 0.0, False, f"similarity {similarity:.2f} < {context.similarity_threshold:.2f}"
        )
    if context.judge is not None:
        correct, why = context.judge.is_correct(case.prompt_text(), reference, answer.text)
        if not correct:
            return MetricResult("accuracy", 0.0, False, f"judge: {why}")
    return MetricResult("accuracy", 1.0, True, f"facts present, similarity {similarity:.2f}")


def missing_facts(facts: list[Fact], text: str) -> list[str]:
    """The required facts that do not appear in ``text``."""
    haystack = _normalise(text)
    return [str(fact) for fact in facts if _normalise(_fact_text(fact)) not in haystack]


def _fact_text(fact: Fact) -> str:
    if isinstance(fact, float) and fact.is_integer():
        return str(int(fact))
    return str(fact)


def _normalise(text: str) -> str:
    lowered = " ".join(text.lower().split())
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", lowered)
