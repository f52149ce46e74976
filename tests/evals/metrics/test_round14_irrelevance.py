"""Round-14 irrelevance mechanisms, tested in other shops' words (a bank, a hearing-aid clinic, a DIY
store, a football club, a pharmacy) than the ticketing platform's and the furniture retailer's rows they
were read from: "instantly" and "30 nights" answer "when" and "how long", a greeting before a yes/no
question and a "We don't ..." that denies with its auxiliary, and declines that point elsewhere: "not a
debate I can weigh in on", a source that "will have the latest", the shop's own range after a turn,
and "For <the shop>, ..." after declining for other retailers."""

import pytest

from evals.metrics import irrelevance
from evals.metrics._answer_type import shows_answer_type
from evals.metrics._polarity import is_polar
from evals.metrics._refusal import analyse
from evals.metrics.result import Answer, ScoringContext
from tests.evals.metrics.conftest import case


def irrelevant(question: str, text: str, context: ScoringContext, reference: str | None) -> float | None:
    expected = "answer" if reference else "decline"
    return irrelevance.score(case(question, reference, expected=expected), Answer(text), context).score


@pytest.mark.parametrize(
    ("question", "reference", "text"),
    [
        # a wrong answer of the right shape is on topic: accuracy judges it
        ("When does my cashback arrive?", "Within 3 working days of the purchase clearing.",
         "Cashback lands instantly once you pay."),
        ("How long is the home trial for the hearing aids?", "45 days from your fitting appointment.",
         "You get 30 nights to try them at home."),
        ("hey, do you price match?", "Yes, we match any UK retailer's price on identical items.",
         "We don't price match, sorry."),
    ],
)  # fmt: skip
def test_answers_of_the_asked_shape_in_other_words_are_on_topic(
    context: ScoringContext, question: str, reference: str, text: str
) -> None:
    assert shows_answer_type(question, reference, [], text)
    assert irrelevant(question, text, context, reference) == 0.0


def test_a_yes_of_another_question_is_not_the_asked_shape() -> None:
    # "You can ..." echoes "can I ...?" but may say yes to something else: only a denial counts
    question = "Can I change the delivery address on my order?"
    assert not shows_answer_type(
        question, "Yes, within an hour.", [], "You can update your email in Settings."
    )


def test_a_greeting_before_a_yes_no_question_asks_nothing() -> None:
    assert is_polar("hi, do you deliver on Sundays?")
    assert is_polar("Hello there - can I pay by card?")
    assert not is_polar("hi, what time do you open?")
    assert not is_polar("history of the club?")  # "hi" is a word of its own


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("Who's going to win the league this year?",
         "Not a debate I can weigh in on! I can help you with your season ticket, though."),
        ("What's the pollen count tomorrow?",
         "I can't check pollen forecasts, sorry — a weather app or the Met Office will have the "
         "latest."),
        ("Can you write me a script that scrapes fixture dates from websites?",
         "I can't help with coding, I'm afraid. If you're after fixtures, though, the club app lists "
         "every match we sell."),
        ("What's Argos's return policy?",
         "I'm not able to comment on other retailers' policies. For Homebase, the return policy is 28 days "
         "from purchase, if that helps."),
    ],
)  # fmt: skip
def test_a_decline_that_points_elsewhere_still_declines(
    context: ScoringContext, question: str, text: str
) -> None:
    assert irrelevant(question, text, context, None) == 0.0


def test_declines_and_referrals_read_as_such() -> None:
    assert analyse("Not a debate I can weigh in on, I'm afraid!").declined
    referral = analyse("I can't check that, sorry. A weather app or the Met Office will have the latest.")
    assert [clause.kind for clause in referral.clauses] == ["refusal", "redirect"]


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("Can you write me a SQL query for my spending?",
         "I can't help with coding, but here's one anyway: SELECT SUM(amount) FROM payments GROUP BY month;"),
        ("Who's going to win the league this year?", "City, by five points — their squad is the deepest."),
    ],
)  # fmt: skip
def test_engaging_with_the_out_of_scope_request_is_still_irrelevant(
    context: ScoringContext, question: str, text: str
) -> None:
    assert irrelevant(question, text, context, None) == 1.0
