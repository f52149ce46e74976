"""Round-10 irrelevance mechanisms, tested in other domains' words (a gym, a library, an airline, a
utility): an answer about another numbered thing than the one asked about ("Studio 1" for "Studio 2")."""

import pytest

from evals.metrics import irrelevance
from evals.metrics.result import Answer, ScoringContext
from tests.evals.metrics.conftest import case


def irrelevant(question: str, text: str, context: ScoringContext, reference: str) -> float | None:
    return irrelevance.score(case(question, reference), Answer(text), context).score


@pytest.mark.parametrize(
    ("question", "reference", "text"),
    [
        ("What time does Studio 2 open?", "Studio 2 opens at 7 am.", "Studio 1 opens at 6 am on weekdays."),
        (
            "How many books can I borrow from Floor 3?",
            "Up to 10 items from Floor 3.",
            "Floor 2 holds the reference collection, which can't be borrowed.",
        ),
        (
            "How long does boarding at Gate 14 take?",
            "Boarding at Gate 14 closes 20 minutes before departure.",
            "Gate 12 boards 40 minutes before departure.",
        ),
        (
            "What's the rate on Tariff 2?",
            "Tariff 2 is 24p per kWh.",
            "Tariff 1 is 28p per kWh with no standing charge.",
        ),
    ],
)
def test_an_answer_about_another_numbered_thing_answers_a_neighbouring_question(
    context: ScoringContext, question: str, reference: str, text: str
) -> None:
    assert irrelevant(question, text, context, reference) == 1.0


@pytest.mark.parametrize(
    ("question", "reference", "text"),
    [
        # the one asked about is named too, beside its neighbour
        (
            "What time does Studio 2 open?",
            "Studio 2 opens at 7 am.",
            "Studio 2 opens at 7 am, an hour after Studio 1.",
        ),
        # another number, not another thing of the same name
        (
            "How long does boarding at Gate 14 take?",
            "Boarding at Gate 14 closes 20 minutes before departure.",
            "Boarding closes 20 minutes before departure, and takes about 25 minutes.",
        ),
    ],
)
def test_the_numbered_thing_asked_about_named_is_relevant(
    context: ScoringContext, question: str, reference: str, text: str
) -> None:
    assert irrelevant(question, text, context, reference) == 0.0
