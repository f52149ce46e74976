"""Round-8 accuracy rules, which came from an insurer's labels, tested in other shops' words (a gym, a
library, an airline, a utility): a fact taken back by a self-correction, something the reference asks
for said not to be needed, a denied thing affirmed by "but X are", "every type of" and "of any age", one
more value in a list of the reference's values, "free" where the reference says £0, facts in looser
words, the user's own figure beside the value a fact asks for in another unit, and a redirect that gives
the value asked for."""

import pytest

from evals.metrics import accuracy
from evals.metrics._contradiction import contradictions
from evals.metrics._facts import Tokenised, match_facts
from evals.metrics.result import Answer, ScoringContext
from evals.sets.format import Fact
from tests.evals.metrics.conftest import case


def _missing(facts: list[Fact], answer: str, reference: str) -> list[str]:
    return match_facts(facts, Tokenised.of(answer), Tokenised.of(reference))[1]


def test_a_fact_taken_back_by_a_self_correction(context: ScoringContext) -> None:
    question = "How much is a day pass at the gym?"
    reference = "A day pass costs £8 and includes the pool."
    gym = case(question, reference, [["£8", "8 pounds"]])
    taken_back = "It's £8 — wait, sorry, let me correct that: day passes come free with any class booking."
    scored = accuracy.score(gym, Answer(taken_back), context)
    assert scored.score == 0.0
    assert "taken back" in scored.reason
    # the same value said again after the correction stands, and so does a correction of something else
    kept = "A day pass is £8. Sorry, I mean £8 including the pool."
    assert "taken back" not in accuracy.score(gym, Answer(kept), context).reason
    other = "A day pass is £8, and it includes the sauna — my mistake, it includes the pool."
    assert "taken back" not in accuracy.score(gym, Answer(other), context).reason


@pytest.mark.parametrize(
    ("reference", "text", "conflicts"),
    [
        # a library asks for a card; an answer that waives it contradicts
        ("Bring your library card and show photo ID to borrow a laptop.",
         "You don't need your library card, just photo ID.", True),
        ("Bring your library card and show photo ID to borrow a laptop.",
         "You don't need to book ahead; bring your library card and photo ID.", False),
        # a utility says what the customer must do
        ("You must give us a meter reading when you move out.",
         "There's no need to give a meter reading when you move.", True),
        ("You must give us a meter reading when you move out.",
         "You don't need to be home; just give us a meter reading.", False),
        ("If you need a meter reading, call us.", "You don't need to call us.", False),
    ],
)  # fmt: skip
def test_what_the_reference_asks_for_is_not_needed(reference: str, text: str, conflicts: bool) -> None:
    assert bool(contradictions(reference, [], text)) is conflicts


@pytest.mark.parametrize(
    ("text", "conflicts"),
    [
        ("Pets aren't allowed in the cabin, but surfboards are.", True),
        ("Pets aren't allowed in the cabin, but guide dogs are.", False),
        ("Pets aren't allowed in the cabin.", False),
    ],
)
def test_a_denied_thing_affirmed_by_a_verb_left_out(text: str, conflicts: bool) -> None:
    reference = "Pets, e-bikes and surfboards are not allowed in the cabin."
    assert bool(contradictions(reference, [], text, "Can I take my dog in the cabin?")) is conflicts


@pytest.mark.parametrize(
    ("reference", "text", "claims"),
    [
        ("The standing charge is 45p a day for electricity; gas is 30p a day.",
         "It's 45p a day for every type of meter.", True),
        ("The standing charge is 45p a day for electricity; gas is 30p a day.",
         "It's 45p a day for electricity.", False),
        ("Members under 16 must be supervised in the pool.",
         "Members of any age can swim on their own.", True),
        ("Members under 16 must be supervised in the pool.",
         "Under 16s must be supervised; in case of any problem, ask the lifeguard.", False),
    ],
)  # fmt: skip
def test_every_type_of_and_of_any_age_are_universal(reference: str, text: str, claims: bool) -> None:
    assert bool(contradictions(reference, [], text)) is claims


def test_one_more_value_in_a_list_of_the_references_values() -> None:
    reference = "Class packs cost £20, £35 or £60."
    facts: list[Fact] = [["£20"], ["£35"], ["£60"]]
    assert contradictions(reference, facts, "The packs are £20, £35, £60 or £100.") != []
    assert contradictions(reference, facts, "£20, £35 or £60, plus a £5 joining fee.") == []


def test_free_where_the_reference_gives_a_zero_price() -> None:
    zero = "Renewals have a £0 fee; a lost card costs £3 to replace."
    assert contradictions(zero, [], "Renewals are free; a replacement card is £3.") == []
    priced = "Renewals cost £1; a lost card costs £3 to replace."
    assert contradictions(priced, [], "Renewals are free; a replacement card is £3.") != []


@pytest.mark.parametrize(
    ("reference", "facts", "text", "found"),
    [
        # a possessive, a doubled consonant before "-ed"
        ("Give us the other passenger's name.", [["other passenger"]],
         "We need the other passenger's name.", True),
        ("We cancel the direct debit after two missed payments.", [["cancel"]],
         "After two missed payments the direct debit is cancelled.", True),
        # a fact cut short of the reference's word, completed by it
        ("We pay third parties first.", [["third part"]], "Third parties are paid first.", True),
        ("Only one part is replaced.", [["part"]], "Only one party is replaced.", False),
        # a bare number at the end of a range the reference gives
        ("Junior members are aged 12-17.", [["12"]], "Juniors are between 12 and 17 years old.", True),
        ("Junior members are aged 12-17.", [["12"]], "Juniors are between 12 and 15 years old.", False),
    ],
)  # fmt: skip
def test_facts_in_looser_words(reference: str, facts: list[Fact], text: str, found: bool) -> None:
    assert (_missing(facts, text, reference) == []) is found


def test_the_users_figure_beside_the_value_in_another_wording() -> None:
    question = "Can I leave my bag in storage for a month?"
    reference = "Bags can be stored for up to 90 days."
    facts: list[Fact] = [["90 days", "three months"]]
    assert contradictions(reference, facts, "Yes, up to 90 days, so a month is fine.", question) == []
    assert contradictions(reference, facts, "Yes, 2 months at most.", question) != []


def test_a_redirect_that_gives_the_value_answers(context: ScoringContext) -> None:
    question = "My library card was stolen with my wallet. When do I have to report it?"
    reference = "Report a stolen card to the police within 24 hours and tell the library."
    stolen = case(question, reference, [["24 hours", "a day"]])
    scored = accuracy.score(stolen, Answer("You will need to contact the police within a day."), context)
    assert "declines" not in scored.reason
    declined = accuracy.score(stolen, Answer("You will need to contact the police about that."), context)
    assert declined.score == 0.0


@pytest.mark.parametrize(
    ("reference", "text", "conflicts"),
    [
        # a gym's joining fee, waived in the answer on a condition the reference never sets
        ("The joining fee is £25.", "It's £25, but it's waived if you join with a friend.", True),
        ("The joining fee is £25.", "It's £25, and it isn't waived for anyone.", False),
        # an airline's exception in other words ("unless the flight is cancelled") may be the waiver
        ("The rebooking fee is €40 unless we cancelled the flight.",
         "€40, waived when the airline called the flight off.", False),
    ],
)  # fmt: skip
def test_a_charge_waived_on_a_condition_the_reference_never_sets(
    reference: str, text: str, conflicts: bool
) -> None:
    assert bool(contradictions(reference, [], text, "How much is it?")) is conflicts


@pytest.mark.parametrize(
    ("text", "conflicts"),
    [
        ("Three years, and it also covers accidental damage.", True),
        ("Three years, and it also covers labour.", False),
        ("Seat upgrades are also available to children.", True),
    ],
)
def test_a_rule_stretched_with_also(text: str, conflicts: bool) -> None:
    reference = "Kettles come with a 3-year warranty covering parts and labour; seat upgrades are for adults."
    assert bool(contradictions(reference, [], text, "How long is the warranty?")) is conflicts


@pytest.mark.parametrize(
    ("text", "conflicts"),
    [
        ("A passport, driving licence, national ID card or student travel card.", True),
        ("A passport, driving licence or national ID card.", False),
        ("A passport or driving licence; student travel cards won't do.", False),
    ],
)
def test_a_denied_thing_in_a_list_of_what_the_reference_accepts(text: str, conflicts: bool) -> None:
    reference = "Bring a passport, driving licence or national ID card. Student travel cards aren't accepted."
    question = "Which ID can I show at the gate?"
    assert bool(contradictions(reference, [], text, question)) is conflicts


@pytest.mark.parametrize(
    ("reference", "text", "claims"),
    [
        ("Library loans are limited to 12 items per card.", "There's no item limit on a family card.", True),
        ("Day passes have no time limit.", "There's no time limit on a day pass.", False),
        ("Day passes are unlimited.", "There's no time limit on a day pass.", False),
    ],
)
def test_no_limit_of_a_kind_is_a_limitless_claim(reference: str, text: str, claims: bool) -> None:
    assert bool(contradictions(reference, [], text)) is claims


@pytest.mark.parametrize(
    ("text", "swapped"),
    [
        ("The toaster is the hungrier at 2,200 W; the kettle is rated 900 W.", True),
        ("Kettle: 900 W. Toaster: 2,200 W.", True),
        ("The toaster draws 900 W and the kettle 2,200 W.", False),
        ("2,200 W for the kettle against 900 W for the toaster.", False),
    ],
)
def test_two_values_given_the_other_way_round(text: str, swapped: bool) -> None:
    reference = "The utility's test kettle is rated 2,200 W, more than the toaster's 900 W."
    assert bool(contradictions(reference, [], text)) is swapped


@pytest.mark.parametrize(
    ("text", "conflicts"),
    [
        ("Bring photo ID; a doctor's note is also required.", True),
        ("Bring your ID. You also need proof of address.", False),
        ("Bring photo ID and proof of address.", False),
    ],
)
def test_a_requirement_added_with_also(text: str, conflicts: bool) -> None:
    reference = "To join the gym, bring photo ID and proof of address."
    assert bool(contradictions(reference, [], text, "What do I need to join?")) is conflicts
