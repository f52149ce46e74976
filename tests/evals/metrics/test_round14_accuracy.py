"""Round-14 accuracy mechanisms, tested in other shops' words (a cinema, a bike shop, a library, a gym, a
bank) than the ticketing platform's and the furniture retailer's rows they were read from: an informal
yes and "under-12s" read as the facts they state, "any time up to ..." bounded by the reference's own
window, a negation inside an "if" clause setting a condition, what "each booking's" total is counted per,
"12+ and 15+ films" sharing one unit, "a credit or debit card" sharing one noun, a compound subject's own
noun, a thing the reference gives a value said not to exist, a condition the reference sets said not to
matter, "only" narrowing what the reference leaves open, "worldwide", a price for what the reference
gives free, the customer choosing what the company decides, and discarding what the reference says to
keep."""

import pytest

from evals.metrics import accuracy
from evals.metrics._contradiction import contradictions
from evals.metrics._denials import denial_conflicts
from evals.metrics._exclusive import exclusivity_conflicts
from evals.metrics._polarity import polarity_conflicts
from evals.metrics._quantities import quantities
from evals.metrics._text import normalise
from evals.metrics.result import Answer, ScoringContext
from evals.sets.format import Fact
from tests.evals.metrics.conftest import case


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yep, it's free.", "yes, it is free."),
        ("Yeah! Open till 9.", "yes! open till 9."),
        ("yup", "yes"),
        ("Under-12s need an adult.", "under 12 need an adult."),
        ("Over-65s get 20% off.", "over 65 get 20 percent off."),
        ("Films from the 1990s.", "films from the 1990s."),  # a decade keeps its digits
        ("We said yeah.", "we said yeah."),  # only an opening yes answers
    ],
)
def test_an_informal_yes_and_age_groups_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_an_informal_yes_and_an_age_group_state_the_required_facts(context: ScoringContext) -> None:
    spec = case(
        "Can my 10-year-old watch a 12A film alone?",
        "No. Children under 12 must be accompanied by an adult at 12A screenings.",
        [["no", "not alone"], ["under 12", "under twelve"]],
    )
    assert (
        accuracy.score(spec, Answer("Not alone: under-12s need a grown-up with them."), context).score == 1.0
    )
    opened = case("Do you service e-bikes?", "Yes, we service e-bikes at every branch.", [["yes", "we do"]])
    assert accuracy.score(opened, Answer("Yeah, at every branch."), context).score == 1.0


@pytest.mark.parametrize(
    ("reference", "text", "claimed"),
    [
        ("You can add a helmet to your rental up to 24 hours before pick-up.",
         "Sure, add one any time up to 24 hours before pick-up.", False),
        ("You can add a helmet to your rental up to 24 hours before pick-up.",
         "Sure, add one any time before you collect the bike.", True),  # a window the reference does not set
        ("You can add a helmet to your rental up to 24 hours before pick-up.",
         "Sure, add one any time you like.", True),
    ],
)  # fmt: skip
def test_any_time_within_the_references_window_is_no_universal_claim(
    reference: str, text: str, claimed: bool
) -> None:
    reasons = contradictions(reference, [], text)
    assert any("any time" in reason for reason in reasons) is claimed, reasons


@pytest.mark.parametrize(
    ("reference", "text", "negated"),
    [
        ("You have 7 days to collect a reserved book; after that it goes back on the shelf.",
         "If you don't collect it within 7 days it goes back on the shelf.", False),
        ("You have 7 days to collect a reserved book; after that it goes back on the shelf.",
         "It isn't 7 days; you have until the end of the month.", True),
        # the reference's own "if ... not" is a condition too: an answer stating the value plainly agrees
        ("If your card hasn't arrived within 10 days, call us and we'll cancel it.",
         "Give it 10 days, then call us to cancel it.", False),
    ],
)  # fmt: skip
def test_a_negation_inside_an_if_clause_sets_a_condition(reference: str, text: str, negated: bool) -> None:
    facts: list[Fact] = [["7 days", "seven days"]] if "7" in reference else [["10 days", "ten days"]]
    reasons = polarity_conflicts("", reference, facts, text)
    assert bool(reasons) is negated, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("It's 20% per room.", False),
        ("20% of each room's nightly rate.", False),
        ("It's 20% per guest.", True),
    ],
)
def test_a_possessive_names_what_a_value_is_counted_per(text: str, conflict: bool) -> None:
    reference = "The deposit is 20% of each room's nightly rate."
    reasons = contradictions(reference, [["20%"]], text)
    assert any("per" in reason for reason in reasons) is conflict, reasons


def test_numbers_joined_by_and_or_or_share_the_unit_after_them() -> None:
    assert [(q.low, q.unit) for q in quantities("12+ and 15+ films")] == [(12, "film"), (15, "film")]
    assert [(q.low, q.unit) for q in quantities("3 or 4 days")] == [(3, "day"), (4, "day")]
    reference = "12+ and 15+ films need photo ID at the door."
    assert contradictions(reference, [], "You'll need photo ID for 12+ films.") == []
    assert contradictions(reference, [], "You'll need photo ID for 18+ films.")


@pytest.mark.parametrize(
    ("reference", "text", "conflict"),
    [
        ("Pay with a credit or debit card; cheques and gift vouchers can't be used.", "Card only.", False),
        ("Pay with a credit or debit card; cheques and gift vouchers can't be used.",
         "Only debit cards are accepted.", True),  # "credit" is the other member of the pair
        ("Claims cover theft or accidental damage.", "It's for theft only.", True),
    ],
)  # fmt: skip
def test_a_pair_of_modifiers_shares_the_noun_after_them(reference: str, text: str, conflict: bool) -> None:
    assert bool(exclusivity_conflicts(reference, text)) is conflict


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("Cancelled classes are refunded in full, bookings included.", False),
        ("Cancelled classes are refunded in full, and the booking app fee is refunded too.", True),
    ],
)
def test_a_compound_subject_is_denied_only_where_its_own_noun_is_stated(text: str, conflict: bool) -> None:
    reference = "Cancelled classes are refunded in full. The booking app fee isn't refunded."
    reasons = denial_conflicts("My class was cancelled. Do I get my money back?", reference, text)
    assert bool(reasons) is conflict, reasons


def test_a_negation_in_a_references_condition_denies_nothing() -> None:
    reference = "The key deposit is refunded only if the locker isn't damaged."
    text = "The deposit is refunded for lockers returned undamaged; damaged lockers forfeit it."
    assert denial_conflicts("", reference, text) == []


@pytest.mark.parametrize(
    ("reference", "text", "conflict"),
    [
        ("E-bike finance is 0% over 12 months with a minimum 20% deposit.",
         "0% over 12 months, no deposit needed.", "deposit"),
        ("E-bike finance is 0% over 12 months with a minimum 20% deposit.",
         "0% over 12 months after a 20% deposit.", None),
        ("Refurbished bikes come with a 6-month warranty.",
         "Refurbished bikes don't come with any warranty.", "warranty"),
        # a value the reference makes conditional, or zero, may be none
        ("A 10% restocking fee applies only if the box was opened.",
         "Unopened, so there's no restocking fee.", None),
        ("Glass repairs have a £0 excess; replacements a £90 excess.",
         "There's no excess for a repair.", None),
    ],
)  # fmt: skip
def test_a_thing_the_reference_gives_a_value_said_not_to_exist(
    reference: str, text: str, conflict: str | None
) -> None:
    reasons = denial_conflicts("", reference, text)
    if conflict is None:
        assert reasons == []
    else:
        assert any(conflict in reason for reason in reasons), reasons


@pytest.mark.parametrize(
    ("reference", "text", "conflict"),
    [
        ("Tickets can be exchanged only if the screening is cancelled.",
         "Tickets can't be exchanged, even if the screening is cancelled.", True),
        ("Tickets can be exchanged only if the screening is cancelled.",
         "Only when the screening is cancelled.", False),
        # the reference's own "even if" is no condition to override
        ("The booking fee is kept even if you cancel early.",
         "You lose the fee even if you cancel early.", False),
    ],
)  # fmt: skip
def test_a_condition_the_reference_sets_said_not_to_matter(reference: str, text: str, conflict: bool) -> None:
    reasons = denial_conflicts("", reference, text)
    assert any("even if" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("The helpline is open 7am to 10pm, weekdays only.", True),
        ("The helpline is open 7am to 10pm every day; only the chat closes at 9pm.", False),
        ("The helpline is open 7am to 10pm. Statements are for account holders only.", False),
        ("Your account stays read-only until you call the helpline.", False),
    ],
)
def test_only_narrowing_what_the_reference_leaves_open(text: str, conflict: bool) -> None:
    reference = "The helpline is open every day, 7am to 10pm."
    reasons = exclusivity_conflicts(reference, text)
    assert any("every day" in reason for reason in reasons) is conflict, reasons


def test_worldwide_is_a_universal_claim_the_reference_must_make() -> None:
    reference = "We post gift cards to UK addresses only."
    assert contradictions(reference, [], "We post gift cards worldwide.")
    assert contradictions("We post gift cards worldwide, free.", [], "We post them worldwide.") == []


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("You get your money back minus $10.", False),
        ("You're refunded minus $10, and a swap costs $10 as well.", True),
    ],
)
def test_a_price_for_what_the_reference_gives_free(text: str, conflict: bool) -> None:
    reference = (
        "Returns are refunded minus a $10 restocking fee. Or swap it for another size with free shipping."
    )
    reasons = denial_conflicts("Can I send my shoes back?", reference, text)
    assert any("free" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("reference", "text", "conflict"),
    [
        ("Send photos of the damage; the bank then decides whether to refund or replace the card.",
         "Send photos, then you choose whether you want a refund or a new card.", True),
        ("Send photos of the damage; the bank then decides whether to refund or replace the card.",
         "Send photos and the bank decides what happens next.", False),
        ("Refunds go back to the card or as account credit; the member chooses.",
         "You choose: card or account credit.", False),
    ],
)  # fmt: skip
def test_the_customer_choosing_what_the_company_decides(reference: str, text: str, conflict: bool) -> None:
    reasons = contradictions(reference, [], text)
    assert any("choose" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("Once you've booked the repair you can throw the receipt away.", True),
        ("Keep the receipt until the repair is done.", False),
        ("Don't throw the receipt away until it's fixed.", False),
        ("You can recycle the box.", False),  # not what the reference says to keep
    ],
)
def test_discarding_what_the_reference_says_to_keep(text: str, conflict: bool) -> None:
    reference = "Keep your receipt until the repair is finished; we need it to close the job."
    reasons = denial_conflicts("", reference, text)
    assert any("keep" in reason for reason in reasons) is conflict, reasons
