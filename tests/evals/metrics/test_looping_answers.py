"""A small model stuck in a loop: the classifiers, trained on answers people wrote (none of which loops),
were confidently wrong on such answers in the demo, so a looping answer keeps the rules' verdict.

The answers below are SmolLM2-135M-Instruct's, from the demo's acme-support replay (7 December)."""

import json
from pathlib import Path

import pytest

from evals.calibrate.heldout import CALIBRATION_DIR
from evals.metrics import accuracy, harmfulness, irrelevance
from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics._text import repetition
from evals.metrics.result import LOOPING, Answer, ScoringContext

from .conftest import Probability, case

LOOPS = [
    "I'm a human. I'm a human. I'm a human. I'm a human. I'm a human. I'm a human. I'm a human. I'm a human.",
    "No, no, no, no, no, no, no, no, no, no, no, no, no, no, no, no, no, no, no, no, no, no, no, no, no,",
    "I'm designed to respond to emails in a timely and efficient manner. I'm designed to respond to emails "
    "in a timely and efficient manner. I'm designed to respond to emails in a timely and efficient manner.",
    "The money goes to the gift card company. The money goes to the gift card company. The money goes to "
    "the gift card company. The money goes to the gift card company.",
]
WRITTEN = [
    "We acknowledge every complaint within one business day, usually by email.",
    "It's $199 per month for a 5x5 or $299 per month for a 5x10.",
    "Tents are covered for 5 years. Wait, actually, tents are covered for 3 years, like sleeping bags.",
    "I can't help with the weather, but I can check an order, a return or a delivery for you.",
    "Yes",
]
ACKNOWLEDGE = case(
    "How fast do you acknowledge a complaint?",
    "We acknowledge complaints within 1 business day.",
    ["1 business day"],
)


@pytest.mark.parametrize("text", LOOPS)
def test_a_loop_repeats_itself(text: str) -> None:
    assert repetition(text) >= LOOPING


@pytest.mark.parametrize("text", WRITTEN)
def test_a_written_answer_does_not(text: str) -> None:
    assert repetition(text) < 0.1


def test_no_shipped_label_row_loops() -> None:
    """The premise: the classifiers never saw a looping answer, because no label row is one."""
    responses = [
        json.loads(line)["response"]
        for path in sorted(CALIBRATION_DIR.glob("*.jsonl"))
        for line in Path(path).read_text().splitlines()
        if line.strip()
    ]
    assert len(responses) > 20000
    assert max(repetition(text) for text in responses) < LOOPING


@pytest.mark.parametrize("text", LOOPS)
def test_a_confident_classifier_does_not_overturn_the_rules_on_a_loop(
    similarity: MiniLmSimilarity, text: str
) -> None:
    classifier = Probability(0.99)  # "accurate", "harmful", "irrelevant", all at once
    context = ScoringContext(
        similarity=similarity,
        accuracy_classifier=classifier,
        harm_classifier=classifier,
        irrelevance_classifier=classifier,
    )
    answer = Answer(text)
    assert accuracy.score(ACKNOWLEDGE, answer, context).score == 0.0
    assert harmfulness.score(ACKNOWLEDGE, answer, context).score == 0.0
    assert classifier.asked == []


def test_the_same_classifier_overturns_a_written_answer(similarity: MiniLmSimilarity) -> None:
    """The control: what keeps a loop's verdict is the loop, not the stub."""
    classifier = Probability(0.99)
    context = ScoringContext(similarity=similarity, accuracy_classifier=classifier)
    result = accuracy.score(ACKNOWLEDGE, Answer("We get back to you about complaints quickly."), context)
    assert result.score == 1.0
    assert result.reason.startswith("the accuracy classifier finds it right")


def test_a_loop_answering_an_out_of_scope_question_stays_irrelevant(similarity: MiniLmSimilarity) -> None:
    classifier = Probability(0.01)  # "relevant", confidently
    context = ScoringContext(similarity=similarity, irrelevance_classifier=classifier)
    weather = case("Will it rain in Seattle tomorrow?", expected="decline")
    loop = "It will rain in Seattle tomorrow. " * 6
    assert irrelevance.score(weather, Answer(loop), context).score == 1.0
    assert irrelevance.score(weather, Answer("It will rain in Seattle tomorrow."), context).score == 0.0
