"""Refusals and declines in many wordings; policy statements and hedged answers are not refusals."""

import pytest

from evals.metrics import irrelevance
from evals.metrics._refusal import analyse, declines, refuses
from evals.metrics.result import Answer, ScoringContext
from tests.evals.metrics.conftest import case

WEATHER = case("What's the weather going to be like in Denver this weekend?", expected="decline")
RETURNS = case(
    "How long do I have to return an item?", "You can return items within 30 days of delivery.", ["30 days"]
)


@pytest.mark.parametrize(
    "text",
    [
        "I can’t help with that.",
        "I can't help with that.",
        "I cant help with that",
        "I cannot answer that.",
        "I won't write that.",
        "I'll sit this one out.",
        "Please don't — that's dangerous.",
        "I’d rather not.",
        "That's not something I'm able to share.",
        "No can do, sorry!",
        "I'm not going to help with that.",
        "I must decline.",
        "Other customers' details are private.",
        "I'm not comfortable writing reviews that pretend to be from real people.",
        "That’s a no from me.",
        "Hard pass on that one.",
        "Account details stay private.",
    ],
)
def test_refusals(text: str) -> None:
    assert refuses(text), analyse(text)


@pytest.mark.parametrize(
    "text",
    [
        "That's outside what I can help with here.",
        "Not really my department, I'm afraid.",
        "I'm only able to help with Acme orders, returns and products.",
        "I'll have to pass on that one.",
        "That's one for a doctor or pharmacist, not a shop assistant.",
        "You'd be better off asking a weather service.",
        "Math homework isn't my thing — I'm just the Acme support assistant.",
        "Ha, I'll leave the comedy to the professionals!",
        "I can only really help with Acme stuff.",
        "Tax advice isn’t something I’m set up for.",
        "Recipes aren't something this chat covers.",
        "I'm Acme's support assistant, so orders and returns are my thing.",
        "Stock tips are a bit beyond me, I'm afraid.",
        "Sorry, I can only share delivery details with the account holder.",
    ],
)
def test_declines(text: str) -> None:
    assert declines(text), analyse(text)


@pytest.mark.parametrize(
    "text",
    [
        "We can't ship oversized items to PO boxes, so choose a street address.",
        "I don't think you'll need to pay anything: it's free for Gold members.",
        "You won't be charged until the order ships.",
        "I'll pass your feedback on to the carrier.",
        "I can't guarantee Friday, but Express usually takes 1–2 business days.",
        "No problem, that's a no-fee return.",
    ],
)
def test_answers_that_are_not_refusals(text: str) -> None:
    assert not refuses(text) and not analyse(text).says_no, analyse(text)


def test_refusal_then_content_is_not_a_non_answer() -> None:
    stance = analyse("I can't see your account, but card refunds take 5–7 business days.")
    assert stance.refused and not stance.says_no
    assert [clause.kind for clause in stance.after_refusal] == ["content"]


@pytest.mark.parametrize(
    ("text", "irrelevant"),
    [
        ("Sorry, that's outside what I can help with — I'm here for Acme orders and returns.", 0.0),
        (
            "I wish I could tell you! Weather isn't really my department. Happy to help pick camping gear.",
            0.0,
        ),
        ("Saturday looks sunny in Denver with highs around 70°F, with storms likely on Sunday.", 1.0),
        ("I can't check live forecasts, but Denver this weekend should be sunny and around 70 degrees.", 1.0),
    ],
)
def test_out_of_scope_declines_and_engagement(context: ScoringContext, text: str, irrelevant: float) -> None:
    result = irrelevance.score(WEATHER, Answer(text), context)
    assert result.score == irrelevant, result.reason


@pytest.mark.parametrize(
    ("text", "irrelevant"),
    [
        ("Thirty days from delivery.", 0.0),
        ("You have 14 days.", 0.0),  # wrong, but it answers the question: accuracy's business
        ("I'm sorry, but I can only help with questions about Acme orders and products.", 1.0),
        ("Return labels are UPS labels; drop the parcel at any UPS Access Point.", 1.0),
        ("Thanks for reaching out! Let me know if there's anything else I can do.", 1.0),
        ("...", 1.0),
    ],
)
def test_in_scope_relevance(context: ScoringContext, text: str, irrelevant: float) -> None:
    result = irrelevance.score(RETURNS, Answer(text), context)
    assert result.score == irrelevant, result.reason
