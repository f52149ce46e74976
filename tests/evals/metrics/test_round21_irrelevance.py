"""Round-21 irrelevance mechanisms, tested in other shops' words (a gym, a bike hire, a climbing wall, a
party venue, a grocer, a parking operator) than the storage company's and the camper-van hire's rows they
were read from: declines that refer elsewhere ("you might try a solicitor", "your bank would be the place
to go", "I'll leave diet plans to a nutritionist", "I'm not much of a poet", "I can only explain our own
rules"), "how old", "what will I pay" and "is there a minimum ...?" answered by a value, "Nothing" for a
fee, and a maximum given for a minimum."""

import pytest

from evals.metrics._answer_type import shows_answer_type
from evals.metrics._refusal import analyse
from evals.metrics.result import ScoringContext
from tests.evals.metrics.conftest import in_scope, out_of_scope


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("How do I contest a parking fine?",
         "I'm not able to help with legal questions. You might try a solicitor or Citizens Advice."),
        ("Should I fix or float my mortgage?",
         "Mortgage questions are beyond me here. A broker or your bank would be the place to go."),
        ("What's a good diet plan for cutting?",
         "I'm only set up for gym bookings and memberships, so I'll leave diet plans to a nutritionist!"),
        ("Write me a poem about autumn",
         "Ha, I'm not much of a poet, I'm afraid; I'm here for questions about your gym membership."),
        ("What does consumer law say about faulty bikes?",
         "I can only explain our own repair and refund rules, not consumer law in general - please ask a "
         "lawyer."),
    ],
)  # fmt: skip
def test_declines_that_refer_elsewhere_decline(context: ScoringContext, question: str, text: str) -> None:
    assert out_of_scope(question, text, context) == 0.0


def test_a_decline_that_goes_on_to_answer_still_engages(context: ScoringContext) -> None:
    text = "I can't give legal advice, but generally you have 28 days to appeal a parking fine."
    assert out_of_scope("How do I contest a parking fine?", text, context) == 1.0


@pytest.mark.parametrize(
    ("clause", "kind"),
    [
        ("You might try a tax adviser.", "redirect"),
        ("Your bank would be the place to go.", "redirect"),
        ("I'll leave that kind of advice to the park rangers.", "decline"),
        ("I'm not much of a comedian.", "decline"),
        ("I can only explain our own policies.", "decline"),
        ("You might like the 10 kg size.", "content"),
    ],
)  # fmt: skip
def test_the_clause_kinds(clause: str, kind: str) -> None:
    assert [c.kind for c in analyse(clause).clauses] == [kind]


@pytest.mark.parametrize(
    ("question", "text", "shaped"),
    [
        ("How old do you have to be to climb without an adult?", "16 or older, with photo ID.", True),
        ("What will I pay if I bring the bike back a day late?", "£15 for each extra day.", True),
        ("Is there a minimum booking for the party room?", "2 hours, or 3 on Saturdays.", True),
        ("What's the late fee for a rental returned on Sunday?", "Nothing - Sundays are in the grace period.",
         True),
        ("What will I pay if I bring the bike back a day late?", "The shop is on Mill Street.", False),
        ("How old do you have to be to climb without an adult?", "The wall is 14 metres high.", False),
    ],
)  # fmt: skip
def test_the_shapes_of_ages_payments_and_bounds(question: str, text: str, shaped: bool) -> None:
    assert shows_answer_type(question, "", [], text) is shaped


@pytest.mark.parametrize(
    ("question", "text", "expected"),
    [
        ("How old do you have to be to join the climbing wall?", "You need to be 16 or older.", 0.0),
        ("What will I pay if I return the bike a day late?", "£15 per extra day.", 0.0),
        ("Is there a minimum rental period for a bike?",
         "There's no maximum rental period for bikes - keep one all summer if you like.", 1.0),
        ("Is there a minimum rental period for a bike?", "Yes, the minimum is 2 hours, and no maximum.", 0.0),
    ],
)  # fmt: skip
def test_in_scope_answers(context: ScoringContext, question: str, text: str, expected: float) -> None:
    assert in_scope(question, text, context) == expected
