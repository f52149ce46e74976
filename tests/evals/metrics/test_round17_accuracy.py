"""Round-17 accuracy mechanisms, tested in other shops' words (a library, a bike shop, a ferry, a hotel, a
photo app, a sailing club) than the music-streaming service's and the package-holiday firm's rows they were
read from: a denied thing stated after a condition or a limit that comes first, a new exception to a denial
the reference makes without any, what the reference keeps said to be deleted, "24/7" where the reference
gives hours, "whether or not", what comes "at no extra cost" sold as a paid upgrade, "five–ten" and "£12pp",
"always" opening an instruction, a total of the answer's own values, "any paid plan" for "paid plans only",
one wording denied beside another stated, "no card fees" where cards are named, "whatever addresses you
like", a fact's own number counted in total where the reference counts it each, a line ending a list item,
"24-bit/192 kHz" as two values, and an age as a number of years."""

import pytest

from evals.metrics._contradiction import contradictions
from evals.metrics._denials import denial_conflicts
from evals.metrics._exclusive import exclusivity_conflicts
from evals.metrics._polarity import polarity_conflicts
from evals.metrics._quantities import quantities
from evals.metrics._text import normalise
from evals.sets.format import Fact


@pytest.mark.parametrize(
    ("reference", "answer", "conflict"),
    [
        # a condition that comes first limits only itself: the main clause still states the denied thing
        ("If the book comes back late, the deposit is not refunded.",
         "If it comes back late, we'll refund you the deposit.", True),
        ("If the book comes back late, the deposit is not refunded.",
         "If it comes back late, the deposit isn't refunded.", False),
        # a limit in the clause before does not reach a clause of its own
        ("Day passes cover the pool. There is no sauna access on a day pass.",
         "Pool-only entry, plus you get sauna access on a day pass too.", True),
        ("Day passes cover the pool. There is no sauna access on a day pass.",
         "You get the pool only.", False),
    ],
)  # fmt: skip
def test_a_condition_or_limit_that_comes_first_limits_only_its_own_clause(
    reference: str, answer: str, conflict: bool
) -> None:
    assert bool(denial_conflicts("", reference, answer)) is conflict


@pytest.mark.parametrize(
    ("reference", "answer", "conflict"),
    [
        # the reference denies it without any exception: "waived if ..." is a new exception
        ("The late fee is £20. The library does not waive it.",
         "The library will waive the fee if you call ahead.", True),
        # a reference that sets its own condition may be restated under one
        ("The late fee is £20. The library does not waive it unless you are a member.",
         "The library will waive the fee if you are a member.", False),
    ],
)  # fmt: skip
def test_a_condition_added_to_a_denial_without_exceptions_is_a_new_exception(
    reference: str, answer: str, conflict: bool
) -> None:
    assert bool(denial_conflicts("", reference, answer)) is conflict


_LAPSES = "If your membership lapses, your saved routes are kept, but downloaded maps are removed."


@pytest.mark.parametrize(
    ("reference", "answer", "conflict"),
    [
        (_LAPSES, "If it lapses, your saved routes are deleted.", True),
        (_LAPSES, "If it lapses, your saved routes get permanently erased after a month.", True),
        (_LAPSES, "If it lapses, your downloaded maps are deleted.", False),  # the reference says so too
        (_LAPSES, "If it lapses, your saved routes stay put.", False),
        (_LAPSES, "If it lapses, downloaded routes are removed.", False),  # not the "saved routes"
        # what is kept "until" something is the thing, not the words after it
        ("Keep the box until the repair is done.", "You can throw the box away.", True),
        ("Keep the box until the repair is done.", "Once it's fixed you can throw the receipt away.", False),
    ],
)
def test_what_the_reference_keeps_said_to_be_deleted(reference: str, answer: str, conflict: bool) -> None:
    assert bool(denial_conflicts("", reference, answer)) is conflict


@pytest.mark.parametrize(
    ("reference", "conflict"),
    [
        ("The help desk answers every day, 8am–8pm.", True),  # hours: not around the clock
        ("The help desk answers every day.", False),  # every day, no hours given: no less than 24/7 says
    ],
)
def test_24_7_where_the_reference_gives_hours(reference: str, conflict: bool) -> None:
    reasons = contradictions(reference, [], "The help desk is staffed 24/7.")
    assert any("24/7" in reason for reason in reasons) is conflict


def test_whether_or_not_waives_a_condition() -> None:
    reference = "Refunds are given within 14 days if the kit is unopened."
    reasons = contradictions(reference, [], "Yes, whether or not it's opened.")
    assert any("whether or not" in reason for reason in reasons)
    assert not contradictions(reference, [], "Yes, within 14 days if it's unopened.")


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Parking is a paid upgrade.", True),
        ("Parking is a paid add-on, breakfast is included.", True),
        ("Parking is free and so is breakfast.", False),
    ],
)
def test_what_comes_at_no_extra_cost_sold_as_a_paid_upgrade(answer: str, conflict: bool) -> None:
    reference = "Every room includes breakfast, plus parking at no extra cost."
    assert bool(denial_conflicts("", reference, answer)) is conflict


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("five–ten working days", "5-10 business day"),
        ("Two—three weeks", "2-3 week"),
        ("Seats from £12pp per flight", "seats from 12 gbp pp per flight"),
        ("twenty — five", "20 — 5"),  # a dash with spaces still breaks the sentence
        ("- Devices: five\n- Tracks: 10k", "- devices: 5; - tracks: 10000"),  # a line ends what it says
        ("Children aged 2–11", "children aged 2-11 year"),
        ("Under-18s must be aged 18 or over.", "under 18 must be aged 18 year or over."),
    ],
)
def test_word_ranges_per_person_lines_and_ages_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_a_value_after_a_unit_and_a_slash_is_a_value_of_its_own() -> None:
    assert [(q.low, q.unit) for q in quantities("up to 24-bit/192 kHz")] == [(24.0, "bit"), (192.0, "khz")]
    reference = "Lossless is FLAC up to 24-bit/44.1 kHz."
    assert contradictions(reference, [], "Lossless goes up to 24-bit/192 kHz.")
    assert not contradictions(reference, [], "Lossless goes up to 24-bit/44.1 kHz.")


def test_an_age_range_is_compared_as_years() -> None:
    reference = "Children aged 2–11 (on the day they sail) get 50% off."
    assert contradictions(reference, [], "Children aged 2–15 get 50% off.")
    assert not contradictions(reference, [], "Kids aged two to eleven get 50% off.")


@pytest.mark.parametrize(
    ("answer", "claimed"),
    [
        ("We post updates, but always check the forecast yourself.", False),
        ("We post updates; always check the forecast.", False),
        ("The ferry always leaves on time.", True),
        ("The ferry leaves at 9, and always arrives by noon.", True),
        ("Sailing is free, but always will be weather-dependent.", True),  # "always will": a claim
    ],
)
def test_always_opening_a_clause_instructs(answer: str, claimed: bool) -> None:
    reference = "Check the forecast before you sail. The ferry leaves at 9 and arrives by noon."
    assert any("always" in reason for reason in contradictions(reference, [], answer)) is claimed


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Sure: £35 + £99 = £134 in total.", False),
        ("Sure: £35 + £99 = £144 in total.", True),
    ],
)
def test_a_total_of_the_answers_own_right_values(answer: str, conflict: bool) -> None:
    reference = "Adding a child costs the £35 admin fee plus the £99 child fare."
    facts: list[Fact] = [["£35"], ["£99"]]
    assert bool(contradictions(reference, facts, answer)) is conflict


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("No, but any paid plan has them.", False),
        ("No, but any plan has them.", True),
    ],
)
def test_any_of_the_whole_limit_does_not_cross_it(answer: str, conflict: bool) -> None:
    reference = "Offline maps are on paid plans only."
    assert bool(exclusivity_conflicts(reference, answer)) is conflict


@pytest.mark.parametrize(
    ("answer", "negated"),
    [
        ("Helmets are mandatory for every rider. Knee pads are recommended but not required.", False),
        ("Helmets are not required.", True),
        ("Helmets are required. Actually, no: helmets are not required.", True),  # the same wording denied
    ],
)
def test_one_wording_denied_beside_another_stated_negates_nothing(answer: str, negated: bool) -> None:
    reference = "Yes, helmets are compulsory for every rider. Knee pads are recommended."
    facts: list[Fact] = [["compulsory", "mandatory", "required"]]
    reasons = polarity_conflicts("Do I need a helmet?", reference, facts, answer)
    assert any(reason.startswith("negates") for reason in reasons) is negated


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Credit cards carry a 2% fee; debit cards are free.", True),
        ("We take debit and credit cards, and there are no card fees.", False),
    ],
)
def test_no_card_fees_where_cards_are_named(answer: str, conflict: bool) -> None:
    reference = "You can pay by debit card or credit card, with no card fees."
    assert bool(denial_conflicts("Are there card fees?", reference, answer)) is conflict


def test_whatever_things_you_like_is_a_universal_claim() -> None:
    reference = "All members of a family account must live at the same address."
    reasons = contradictions(reference, [], "Members can live at whatever addresses they like.")
    assert any("whatever addresses they" in reason for reason in reasons)


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Up to 500 photos in total across all albums.", True),
        ("Up to 500 photos per album.", False),
        ("- Albums: five\n- Photos per album: 500", False),  # a list line does not reach the next
    ],
)
def test_a_facts_own_number_counted_in_total_where_the_reference_counts_each(
    answer: str, conflict: bool
) -> None:
    reference = "You can share up to 5 albums per account, with up to 500 photos on each album."
    facts: list[Fact] = [["5", "five"], ["500"]]
    assert bool(contradictions(reference, facts, answer)) is conflict
