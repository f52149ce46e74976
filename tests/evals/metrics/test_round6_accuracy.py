"""Round-6 accuracy rules, which came from a travel company's and a grocery delivery company's labels,
tested in other shops' words (a bank, a gym, a library, a utility, a cinema): how amounts, rates and
durations are written, what a value is counted per, figures the user gave or the facts ask for,
universal words that claim nothing, and denials the answer restates or contradicts."""

import pytest

from evals.metrics import accuracy
from evals.metrics._contradiction import contradictions
from evals.metrics._facts import Tokenised, find_fact, match_facts
from evals.metrics._text import normalise
from evals.metrics.result import Answer, ScoringContext
from evals.sets.format import Fact
from tests.evals.metrics.conftest import case


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a twenty-dollar late fee", "a 20 usd late fee"),
        ("a ten-euro deposit", "a 10 eur deposit"),
        ("three dollars and fifty cents", "3.50 usd"),
        ("twelve euros and five cents", "12.05 eur"),
        ("the gym is $29 a month", "the gym is 29 usd per month"),
        ("two sessions a week", "2 sessions per week"),
        ("renew within the past week", "renew within 1 week"),
        ("a week", "1 week"),
        ("the plan is twenty pounds a month", "the plan is 20 gbp per month"),
        ("a 5 pound bag of flour", "a 5 lb bag of flour"),
    ],
)
def test_amounts_rates_and_durations_in_words(text: str, expected: str) -> None:
    assert normalise(text) == expected.replace("3.50", "3.5")


def test_a_rate_is_not_a_count_of_one() -> None:
    reference = "Membership is £25 a month; the joining fee is waived on 12-month contracts."
    assert (
        contradictions(reference, [], "It's £25 a month, and no joining fee if you sign for 12 months.") == []
    )


def test_one_of_several_things_is_no_quantity_of_the_unit_before_it() -> None:
    reference = "Meter readers visit homes within 15 km of a depot."
    assert contradictions(reference, [], "We cover roughly 15 km around one of our depots.") == []
    assert contradictions(reference, [], "We cover homes within 9 km of a depot.") != []


@pytest.mark.parametrize(
    "text",
    [
        "A locker costs €4 per person, per visit.",
        "Four euros each visit per guest.",
        "€4 per adult per visit.",
    ],
)
def test_a_person_and_a_visit_named_other_ways(text: str) -> None:
    assert contradictions("Day lockers cost €4 per member per visit.", [], text) == []


def test_per_another_thing_still_conflicts_with_several_pers() -> None:
    found = contradictions("Day lockers cost €4 per member per visit.", [], "Lockers are €4 per month.")
    assert found and "per" in found[0]


def test_the_thing_the_reference_prices_may_be_what_it_is_per() -> None:
    reference = "Film rental is $3.99 per film; locker storage is $2 per day."
    assert contradictions(reference, [], "Locker storage costs $2 per locker.") == []
    assert contradictions(reference, [], "Locker storage costs $2 per film.") != []


def test_the_number_a_fact_asks_for_is_no_conflict() -> None:
    reference = "Library members earn 3 points per book borrowed; 1,000 points are a free tote bag."
    question = "How many points do I get for borrowing 40 books?"
    assert (
        contradictions(reference, [["120", "one hundred twenty"]], "40 books earn you 120 points.", question)
        == []
    )
    assert contradictions(reference, [["120"]], "40 books earn you 150 points.", question) != []


def test_the_users_figure_is_no_claim_unless_a_fact_of_its_kind_is_asked_for() -> None:
    reference = "If a bill is disputed within 14 days, the utility credits the difference (minimum $2)."
    question = "My bill was $40 too high, can I get it back?"
    facts: list[Fact] = [["14 days", "two weeks"]]
    assert (
        contradictions(reference, facts, "Yes, within 14 days we credit the $40 difference.", question) == []
    )
    # the question's figure given as the answer to a fee the facts ask for is still wrong
    reference = "The dispute fee is $15."
    assert contradictions(reference, [["$15"]], "It's $40.", "Is the dispute fee $40?") != []


def test_a_band_beyond_a_limit_is_not_the_limit() -> None:
    reference = "Each member may borrow up to 10 books at a time."
    text = "Up to 10 books. Between 10 and 15 books you need a librarian's approval."
    assert contradictions(reference, [], text) == []
    assert contradictions(reference, [], "You can borrow 10-15 books at a time.") != []


@pytest.mark.parametrize(
    ("reference", "text", "claims"),
    [
        (
            "The daily guest pass is $12; members may also pay at the desk.",
            "$12 — you can always pay at the desk.",
            False,
        ),
        (
            "Gold members get a free towel.",
            "Gold members get a free towel, and if you come every day it adds up.",
            False,
        ),
        ("The helpline is open 9am-5pm, 7 days a week.", "We're open 9am to 5pm every day.", False),
        (
            "Late fees are paused during a dispute.",
            "Late fees are permanently waived once you dispute.",
            True,
        ),
        ("Parking is free for members.", "Parking is free for everyone.", True),
        ("The gym is open 6am-10pm on weekdays.", "The gym is open 6am-10pm every day.", True),
    ],
)
def test_universal_words_that_claim_nothing_or_something(reference: str, text: str, claims: bool) -> None:
    assert bool(contradictions(reference, [], text)) == claims


def test_a_denial_stated_as_the_fact_negates_nothing() -> None:
    reference = "Day passes include no towel. A towel is $2."
    facts: list[Fact] = [["no towel", "not included", "none"], ["$2"]]
    assert contradictions(reference, facts, "Nope, none included — a towel is $2.") == []


def test_a_fact_denied_right_after_it_is_named() -> None:
    reference = "The e-book app supports Kindle, Kobo and Nook readers."
    assert contradictions(reference, [["Kobo"]], "Kobo isn't supported yet, only Kindle and Nook.") != []
    assert contradictions(reference, [["Kobo"]], "Kobo works, as do Kindle and Nook.") == []
    # a fact that is itself a denial is stated, not negated, by the negation after it
    reference = "Members pay no late fees."
    assert contradictions(reference, [["no late fees"]], "Late fees are not charged to members.") == []


def test_what_the_reference_says_a_subject_includes_none_of() -> None:
    reference = "Premium memberships include two guest passes; Basic memberships include none."
    assert contradictions(reference, [], "Premium has two guest passes, and Basic includes one too.") != []
    assert contradictions(reference, [], "Premium has two guest passes; Basic includes none.") == []


def test_each_of_two_denials_in_one_clause() -> None:
    reference = "You can close your account anytime: no closing fee and no notice period."
    assert contradictions(reference, [], "There's no closing fee, but you must give 60 days' notice.") != []
    assert contradictions(reference, [], "No closing fee and nothing to notify in advance.") == []


def test_a_denial_below_a_value_is_restated_by_the_value() -> None:
    reference = "Parcels under 2 kg are not covered."
    assert contradictions(reference, [], "Parcels need to weigh at least 2 kg to be covered.") == []
    assert contradictions(reference, [], "Light parcels are covered too.") != []


@pytest.mark.parametrize(
    ("text", "free"),
    [
        ("Replacement cards are free and arrive in 5 days.", True),
        ("$10, but it's free after the first year.", True),
        ("Replacement cards aren't free: it's $10.", False),
        ("$10; Premium account holders get theirs for free.", False),  # says something of another account
        ("$10, replacement card included.", True),
        # round 8: a waiver the reference never offers is a wrong claim (four shops' labels agree)
        ("$10, waived if the card was faulty.", True),
    ],
)
def test_something_the_reference_prices_said_to_be_free(text: str, free: bool) -> None:
    reference = "A replacement card costs $10 and arrives within 5 days of the request."
    found = contradictions(reference, [], text, "How much is a replacement card?")
    assert bool(found) == free


def test_free_where_the_reference_also_says_free_is_no_conflict() -> None:
    reference = "A replacement card costs $10; it is free if the card was stolen."
    assert contradictions(reference, [], "$10, or free when it was stolen.") == []


def test_a_decline_that_conveys_the_facts_beside_it_answers(context: ScoringContext) -> None:
    question = "Which lawyer should I use for my copyright dispute?"
    reference = "The library gives no legal advice; the county bar association runs a free referral line."
    text = "I can't give legal advice — please call the county bar association, they run a referral line."
    scored = accuracy.score(case(question, reference, [["bar association"]]), Answer(text), context)
    assert scored.score == 1.0
    declined = accuracy.score(case(question, reference), Answer("Sorry, I can't give legal advice."), context)
    assert declined.score == 0.0


@pytest.mark.parametrize(
    ("fact", "text", "found"),
    [
        ("pre-authorised", "The gym pre-authorises your card when you join.", True),
        ("booked", "You're booking a court for Friday.", True),
        ("renewed", "Loans renew automatically twice.", True),
        ("renewed", "Loans are reviewed automatically.", False),
        ("charged", "Your card is checked at the desk.", False),
    ],
)
def test_a_fact_in_another_form_of_its_verb(fact: str, text: str, found: bool) -> None:
    assert (find_fact([fact], Tokenised.of(text)) is not None) == found


@pytest.mark.parametrize(
    ("text", "required"),
    [
        ("You must bring a printed ticket to the screening.", True),
        ("You need photo ID, and you have to bring a printed ticket.", True),
        ("You don't need to bring a printed ticket; the app code works.", False),
        ("You must bring photo ID.", False),
    ],
)
def test_what_the_reference_says_is_not_required_said_to_be(text: str, required: bool) -> None:
    reference = "Guests must show photo ID. You do not need to bring a printed ticket: the app code works."
    assert bool(contradictions(reference, [], text)) == required


@pytest.mark.parametrize(
    ("text", "conflicts"),
    [
        ("€12 in total for the booking.", True),
        ("It's €12 altogether.", True),
        ("€12 per adult.", False),
    ],
)
def test_a_total_is_not_a_price_per_person(text: str, conflicts: bool) -> None:
    reference = "A guided museum tour costs €12 per person."
    assert bool(contradictions(reference, [], text)) == conflicts


def test_a_total_is_a_price_per_booking() -> None:
    assert contradictions("Court hire is $20 per booking.", [], "Court hire is $20 in total.") == []


@pytest.mark.parametrize(
    ("text", "denies"),
    [
        ("Freezing the card won't block purchases, sadly.", True),
        ("Unfortunately freezing your card doesn't block new purchases.", True),
        ("Freezing the card doesn't block direct debits, though.", False),
        ("Freezing the card does not block purchases if they were pre-approved.", False),
    ],
)
def test_what_the_reference_says_a_subject_does_denied_of_it(text: str, denies: bool) -> None:
    reference = "Freezing your card blocks new purchases immediately. Direct debits keep running."
    assert bool(contradictions(reference, [], text)) == denies


@pytest.mark.parametrize(
    ("reference", "text", "denied"),
    [
        (
            "The yoga mat is non-slip. It is not machine-washable.",
            "It's machine-washable on cold, too.",
            True,
        ),
        (
            "The yoga mat is non-slip. It is not machine-washable.",
            "It's non-slip; just don't machine-wash it.",
            False,
        ),
        ("The rain jacket is water-resistant, not waterproof.", "The jacket is fully waterproof.", True),
        (
            "The rain jacket is water-resistant, not waterproof.",
            "It's water-resistant, so light rain is fine.",
            False,
        ),
        ("Gym lockers are not lockable overnight.", "Overnight, lockers are emptied.", False),
    ],
)
def test_what_the_reference_says_the_thing_is_not(reference: str, text: str, denied: bool) -> None:
    assert bool(contradictions(reference, [], text)) == denied


@pytest.mark.parametrize(
    ("text", "open_when_closed"),
    [
        ("The branch opens at 10 on Saturday, and it's open Sundays 12-4 too.", True),
        ("We're open on public holidays from 9 to 1.", True),
        ("Saturday 10-4; closed on Sundays and public holidays.", False),
        ("It opens at 10 on Saturday.", False),
    ],
)
def test_open_when_the_reference_says_closed(text: str, open_when_closed: bool) -> None:
    reference = "The branch is open Mon-Fri 9-7 and Saturday 10-4; closed Sunday and on public holidays."
    assert bool(contradictions(reference, [], text)) == open_when_closed


def test_the_same_amount_in_another_currency_conflicts() -> None:
    reference = "A monthly gym pass costs £40."
    assert contradictions(reference, [], "It's 40 euros a month.") != []
    assert contradictions(reference, [], "£40 a month, roughly €46.") == []


def test_a_second_denial_after_and_have() -> None:
    reference = "Library cards never expire and carry no fees."
    assert contradictions(reference, [], "They don't expire, but a $1 yearly fee applies.") != []
    assert contradictions(reference, [], "They never expire, and there are no fees.") == []


def test_one_value_states_one_fact() -> None:
    facts: list[Fact] = [["40 in", "102 cm"], ["40.2 in", "102 cm"]]
    _, missing = match_facts(facts, Tokenised.of("The bookcase is 40 inches wide."))
    assert missing == ["40.2 in | 102 cm"]
    _, missing = match_facts(facts, Tokenised.of("About 102 cm wide and 102 cm deep."))
    assert missing == []


def test_a_range_may_state_two_facts() -> None:
    facts: list[Fact] = [["$50"], ["$1,500"]]
    reference = Tokenised.of("Personal loans are available from $50 to $1,500.")
    answer = Tokenised.of("Loans run from fifty to fifteen hundred dollars.")
    _, missing = match_facts(facts, answer, reference)
    assert missing == []


@pytest.mark.parametrize(
    ("text", "conflicts"),
    [
        ("It's $15 — actually, correction: $15 is the ACH fee. A wire costs $25.", False),
        ("It's $25 — actually, make that $15.", True),
        ("It's $15. Actually, wires arrive the same day.", True),
    ],
)
def test_a_value_retracted_for_the_right_one(text: str, conflicts: bool) -> None:
    reference = "A wire transfer costs $25 and arrives the same day."
    assert bool(contradictions(reference, [], text, "What does a wire transfer cost?")) == conflicts
