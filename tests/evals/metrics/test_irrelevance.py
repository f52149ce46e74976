"""Irrelevance: the shape of the answer, terse answers, echoes of the reference, and declines that comply."""

import pytest

from evals.metrics import irrelevance
from evals.metrics._answer_type import states_other_kind
from evals.metrics.result import Answer, ScoringContext
from tests.evals.metrics.conftest import case

EXPRESS = case(
    "How long does express shipping take?", "Express takes 1–2 business days.", ["1-2 business days"]
)
MILDEW = case(
    "My hammock got mildew after I packed it wet. Is that covered?",
    "No. Mildew from storing it wet is not covered by the warranty.",
)
FINAL_SALE = case(
    "Can I return a Final Sale item?", "No. Final Sale items cannot be returned.", ["Final Sale"]
)
PAYMENT = case(
    "Which payment methods can I use?",
    "Cards (Visa, Mastercard, Amex), PayPal, Apple Pay and Acme gift cards.",
)
COMPLAIN = case(
    "The courier was rude to me at the door. How do I complain about that?",
    "Use the complaint form, email or chat; complaints about staff go to Tier 2.",
    ["Tier 2"],
)


@pytest.mark.parametrize(
    ("question", "answer", "other"),
    [
        ("How long does express shipping take?", "Express costs $19.95 per order.", True),
        ("How much is express shipping?", "Express arrives in 1–2 business days.", True),
        ("How many gift cards can I use on one order?", "Gift cards come in $10 to $500.", True),
        ("How many points do I earn?", "You earn 2 points for every $1.", False),
        ("How much does the lantern weigh?", "It weighs 450 g.", False),
        ("When does a parcel count as oversized?", "Over 70 lb or 108 inches long.", False),  # a condition
        ("How much is next-day and by what time must I order?", "$34.95, before 1 pm.", False),
    ],
)
def test_another_kind_of_quantity(question: str, answer: str, other: bool) -> None:
    assert states_other_kind(question, answer) is other


@pytest.mark.parametrize(
    ("spec", "text", "irrelevant", "evidence"),
    [
        (
            EXPRESS,
            "Express costs $19.95, or it's free for Gold members.",
            1.0,
            "answers a different question",
        ),
        (MILDEW, "No.", 0.0, "a terse answer of the expected shape"),
        (case("Can I swap the size?", "Yes, exchanges cover another size."), "You sure can!", 0.0, "terse"),
        (FINAL_SALE, "Final Sale alert! Up to 60% off tents and coolers this week only.", 1.0, "lacks"),
        (PAYMENT, "- Visa / Mastercard / Amex\n- PayPal\n- Apple Pay", 0.0, "says what the reference says"),
    ],
)
def test_in_scope_shapes(
    context: ScoringContext, spec: object, text: str, irrelevant: float, evidence: str
) -> None:
    result = irrelevance.score(spec, Answer(text), context)  # type: ignore[arg-type]
    assert (result.score, evidence in result.reason) == (irrelevant, True), result.reason


def test_an_answer_describing_the_action_asked_about_is_on_topic(context: ScoringContext) -> None:
    text = "So sorry. You can complain through the form on our site or call us on 1-800-555-0142."
    result = irrelevance.score(COMPLAIN, Answer(text), context)
    assert result.score == 0.0 and "describes how to complain" in result.reason, result.reason


def test_a_decline_that_does_it_anyway_engages(context: ScoringContext) -> None:
    haiku = case("Write me a haiku about rain.", expected="decline")
    declined = irrelevance.score(
        haiku, Answer("Sorry, poems aren't my thing — I help with Acme orders."), context
    )
    anyway = irrelevance.score(
        haiku, Answer("Sorry, I can't write poems. But here's one anyway:\n\nSoft drops on the fly"), context
    )
    assert (declined.score, anyway.score) == (0.0, 1.0), anyway.reason
    assert "anyway" in anyway.reason
