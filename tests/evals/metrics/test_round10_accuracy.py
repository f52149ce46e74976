"""Round-10 accuracy mechanism, tested in other shops' words (a gym, a library, an airline, a utility):
a sum of money the reference never gives nor implies (``_prices``), and its near misses: a sum the
reference's own figures add up to, multiply to or take a percentage of, a price taken back by a
self-correction; where the reference prices nothing, one sum but not a worked example of two."""

import pytest

from evals.metrics import accuracy
from evals.metrics._prices import new_prices
from evals.metrics.result import Answer, ScoringContext
from tests.evals.metrics.conftest import case


@pytest.mark.parametrize(
    ("question", "reference", "text", "new"),
    [
        # a gym: the price asked for, then another for a slot the reference does not price
        ("How much is the off-peak membership?", "Off-peak membership costs £25 a month.",
         "It's £25 a month, but it rises to £32 after the first six months.", ["32 gbp"]),
        ("How much is the off-peak membership?", "Off-peak membership costs £25 a month.",
         "It's £25 a month, so £300 over a full year.", []),
        # a library: a late fee per day, and what a week of it comes to
        ("What's the late fee on a laptop loan?", "Late laptop returns are charged $2 per day.",
         "$2 per day, so $14 if it's a week late.", []),
        ("What's the late fee on a laptop loan?", "Late laptop returns are charged $2 per day.",
         "$2 per day, unless it's a weekend loan, in which case the flat $10 fee applies.", ["10 usd"]),
        # an airline: the reference's two figures added up
        ("What does a checked bag cost on Basic?",
         "A checked bag costs €35 on Basic; each extra bag is €50.",
         "€35 for the first bag, so €85 for two.", []),
        ("What does a checked bag cost on Basic?",
         "A checked bag costs €35 on Basic; each extra bag is €50.",
         "€35, or €20 if you add it at booking.", ["20 eur"]),
        # a utility: a percentage the reference gives, taken off its price
        ("How much is the standing charge with the direct debit discount?",
         "The standing charge is £40 a quarter, with 10% off for direct debit.",
         "10% off £40, so you'd pay £36 a quarter.", []),
        # a utility that prices nothing: one sum is a charge of the answer's own, two a worked example
        ("How long is a meter reading valid?", "A meter reading is valid for 14 days.",
         "14 days; after that a new reading costs £5.", ["5 gbp"]),
        ("How much cashback do I get on the green tariff?", "The green tariff gives 5% cashback.",
         "5% cashback, so a £200 bill gives you £10 back.", []),
    ],
)  # fmt: skip
def test_a_price_the_reference_does_not_give(
    question: str, reference: str, text: str, new: list[str]
) -> None:
    assert new_prices(question, reference, [], text) == new


def test_a_new_price_fails_the_answer_and_a_corrected_one_does_not(context: ScoringContext) -> None:
    question, reference = "How much is the off-peak membership?", "Off-peak membership costs £25 a month."
    gym = case(question, reference, [["£25", "25 pounds"]])
    added = "Off-peak membership costs £25 a month, but it goes up to £32 after six months."
    scored = accuracy.score(gym, Answer(added), context)
    assert scored.score == 0.0
    assert "32 gbp" in scored.reason
    corrected = "Off-peak membership costs £32 a month. Sorry, let me correct that: it costs £25 a month."
    assert "price" not in accuracy.score(gym, Answer(corrected), context).reason
