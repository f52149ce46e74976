"""Round-16 accuracy mechanisms, tested in other shops' words (a bakery, a ferry, a gym, a garage, a
cinema) than the e-scooter service's and the dental chain's rows they were read from: cents in the text's
own currency, "€29,99", "twenty-six pounds eighty" and "seven dollars fifty", "£500–£10,000" as one range,
a numbered list's markers as no values, "a full hour", "Band 1" as a name and no second price, "whatever
the highest" as no universal, "every" backing "everyone", a waiver the question asks about, "including"
in a price, a denial on a condition ("If you ..., there's no hold"), "only" in a clause beside a "24/7"
one, "you can skip the photo", and what the reference includes charged on top."""

import pytest

from evals.metrics._contradiction import contradictions
from evals.metrics._denials import denial_conflicts
from evals.metrics._exclusive import exclusivity_conflicts
from evals.metrics._polarity import polarity_conflicts
from evals.metrics._quantities import quantities
from evals.metrics._text import normalise
from evals.sets.format import Fact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Croissants are 90 cents, the loaf €3.", "croissants are 0.9 eur, the loaf 3 eur."),
        ("Stamps are 60 cents.", "stamps are 0.6 usd."),  # no other currency: dollars' cents
        ("€29,99 a month", "29.99 eur per month"),
        ("It's twenty-six pounds eighty.", "it is 26.8 gbp."),
        ("seven dollars fifty", "7.5 usd"),
        ("5 pounds 10 ounces", "5 lb 10 ounces"),  # a weight stays a weight
        ("Fares from £500–£1,000.", "fares from 500-1000 gbp."),
        ("1. Book online\n2. Pay £5", "book online; pay 5 gbp"),  # round 17: a line ends what it says
        ("£95 for a full hour", "95 gbp for 1 hour"),
        ("1,000 tickets", "1000 tickets"),  # a thousands separator is no decimal comma
    ],
)
def test_money_ranges_list_markers_and_a_full_hour_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_a_number_after_a_name_takes_no_unit_from_a_price_before_it() -> None:
    assert [(q.low, q.unit) for q in quantities("It's £26.80 for Band 1.")] == [(26.8, "gbp"), (1.0, "")]
    # a number of its own after a price still takes the price's unit ("£5 for adults, 3 for kids")
    assert [(q.low, q.unit) for q in quantities("£5 for adults, 3 for kids")] == [(5.0, "gbp"), (3.0, "gbp")]


@pytest.mark.parametrize(
    ("reference", "text", "claimed"),
    [
        ("You pay one fee per course, at the highest band your treatment reaches.",
         "One fee for the course (whatever the highest band is that you reach).", False),
        ("You pay one fee per course, at the highest band your treatment reaches.",
         "One fee, whatever the treatment.", True),
        ("Every passenger on the group sailing must be 18 or older.",
         "Everyone on a group sailing has to be 18 or over.", False),
        ("Passengers on the group sailing must be 18 or older.",
         "Everyone on a group sailing has to be 18 or over.", True),
    ],
)  # fmt: skip
def test_whatever_the_highest_and_every_one_are_no_new_universals(
    reference: str, text: str, claimed: bool
) -> None:
    reasons = contradictions(reference, [], text)
    assert any(reason.startswith("claims") for reason in reasons) is claimed, reasons


@pytest.mark.parametrize(
    ("question", "conflict"),
    [("Can a late fee ever be waived?", False), ("Is there a late fee?", True)],
)
def test_a_waiver_the_question_asks_about_is_no_new_waiver(question: str, conflict: bool) -> None:
    reference = "Yes, once every 12 months for a documented emergency such as a hospital stay."
    text = (
        "Yes, we'll waive it once every 12 months if you had a documented emergency, like a family wedding."
    )
    reasons = denial_conflicts(question, reference, text)
    assert any(reason.startswith("waives it") for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("reference", "conflict"),
    [
        ("The valet costs £45, including interior vacuum and wax.", False),
        ("The valet costs £45; interior vacuum and wax cost £10 each.", True),
    ],
)
def test_what_the_reference_includes_in_a_price_may_be_called_included(
    reference: str, conflict: bool
) -> None:
    reasons = denial_conflicts("How much is a valet?", reference, "It's £45 (vacuum + wax included).")
    assert any("free where the reference prices it" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "negated"),
    [
        ("A £30 hold is placed, not a charge. If you pay from your wallet, there's no hold at all.", False),
        ("A £30 charge is taken. There's no hold at all.", True),
    ],
)
def test_a_denial_on_a_condition_does_not_negate_the_fact(text: str, negated: bool) -> None:
    reference = "A temporary £30 hold is placed on your card at the start, not a charge."
    facts: list[Fact] = [["hold", "pre-authorisation"]]
    reasons = polarity_conflicts("Why did you take £30?", reference, facts, text)
    assert any(reason.startswith("negates") for reason in reasons) is negated, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("Web chat is 24/7; the box office is open 10:00-22:00, Monday to Friday only.", True),
        ("Web chat is 24/7; the box office is open 10:00-22:00 every day.", False),
    ],
)
def test_only_narrows_what_the_reference_leaves_open_beside_a_clause_that_does_not(
    text: str, conflict: bool
) -> None:
    reference = "Web chat is available 24/7. The box office is open 10:00-22:00 every day."
    reasons = exclusivity_conflicts(reference, text)
    assert bool(reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("Park anywhere in the zone, and you can skip the parking photo there.", True),
        ("Park anywhere in the zone; a parking photo is still needed.", False),
    ],
)
def test_you_can_skip_what_the_reference_requires(text: str, conflict: bool) -> None:
    reference = "You can park anywhere in the zone. A parking photo is still required."
    reasons = denial_conflicts("Where can I park?", reference, text)
    assert any("is not needed" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("It's £60 for the MOT; the emissions test is charged separately on top.", True),
        ("It's £60 and that covers the emissions test.", False),
        ("It's £60; parking at the garage is charged separately.", False),  # not what it includes
    ],
)
def test_what_the_reference_includes_charged_on_top(text: str, conflict: bool) -> None:
    reference = "The MOT is £60 and includes the emissions test."
    reasons = denial_conflicts("How much is an MOT?", reference, text)
    assert any(reason.startswith("charges on top") for reason in reasons) is conflict, reasons
