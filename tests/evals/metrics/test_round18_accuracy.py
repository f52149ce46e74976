"""Round-18 accuracy mechanisms, tested in other shops' words (a ski school, a bakery, a bike hire, a tool
library, a museum, a print shop, a language app) than the home-broadband and summer-camp rows they were
read from: a meridiem after a clock range belongs to both ends, a bare hour beside a clock time is one too,
a unit glued to its number, "costs you nothing" is free, a universal claim a required fact words or the
reference denies, "everything" for "in full", a yes/no question after a condition, an echo of another
predicate, one more option beside the reference's only one, an "only" the reference sets itself, "the past
12 months", the household as the customer, a threshold in a condition, opposite outcomes, the working of a
right sum, a price worked from the answer's own count, "always" adding nothing to a plain sentence, "don't
worry" denying nothing, and "fine" accepting."""

import pytest

from evals.metrics._contradiction import contradictions
from evals.metrics._denials import denial_conflicts
from evals.metrics._facts import Tokenised, match_facts
from evals.metrics._opposites import opposite_outcomes
from evals.metrics._polarity import is_polar, opening_polarity
from evals.metrics._prices import new_prices
from evals.metrics._quantities import quantities
from evals.metrics._text import normalise
from evals.sets.format import Fact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Lessons run 1–3 pm", "lessons run 13:00 to 15:00"),
        ("collect between 9 and 10 in the morning", "collect 9:00 to 10:00"),
        ("open 8-6pm", "open 8:00 to 18:00"),  # a start after the end on the clock face is the morning
        ("11-2 pm", "11:00 to 14:00"),
        ("Mon–Sat 8–4:30", "monday — saturday 8:00 to 4:30"),
        ("from 10:15 to 3", "from 10:15 to 3:00"),
        ("slots at 4 and 5 pm", "slots at 4 and 17:00"),  # two times listed, no range
        ("ages 6-12", "ages 6-12 year"),  # no clock time, no clock range
    ],
)  # fmt: skip
def test_clock_ranges_share_their_meridiem(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_a_clock_fact_is_found_in_a_range_with_one_meridiem() -> None:
    facts: list[Fact] = [["1 pm", "13:00", "1:00"], ["10 am", "10:00"]]
    found, missing = match_facts(
        facts, Tokenised.of("Lessons: 1–3 pm; pick-up between 10 and 11 in the morning")
    )
    assert not missing and len(found) == 2


@pytest.mark.parametrize(
    ("glued", "spaced"),
    [
        ("300Mbps down", "300 Mbps down"),
        ("a 2TB drive", "a 2 terabyte drive"),
        ("a 7kW charger", "a 7 kilowatt charger"),
    ],
)  # fmt: skip
def test_a_unit_glued_to_its_number_reads_as_written_apart(glued: str, spaced: str) -> None:
    assert [(q.low, q.unit) for q in quantities(glued)] == [(q.low, q.unit) for q in quantities(spaced)]
    assert len(quantities(glued)) == 1


def test_a_fact_of_a_bare_number_is_found_beside_a_glued_unit() -> None:
    found, missing = match_facts(["300", "50"], Tokenised.of("300Mbps down / 50Mbps up"))
    assert len(found) == 2 and not missing


def test_costs_you_nothing_is_free() -> None:
    assert normalise("Resizing costs you nothing.") == "resizing free."
    found, missing = match_facts(["free"], Tokenised.of("Resizing costs you nothing."))
    assert found and not missing


@pytest.mark.parametrize(
    ("facts", "conflict"),
    [
        ([["no contract", "cancel anytime"]], False),  # the facts accept "cancel anytime"
        ([["no contract", "rolling monthly"]], True),
    ],
)  # fmt: skip
def test_a_universal_claim_the_required_facts_word_is_no_new_claim(facts: list[Fact], conflict: bool) -> None:
    reference = "The app subscription is £6 a month with no contract."
    answer = "£6 a month and you can cancel anytime."
    assert bool(contradictions(reference, facts, answer)) is conflict


def test_a_universal_claim_the_reference_denies() -> None:
    reference = "We aim to dispatch prints the next day, but this isn't guaranteed."
    reasons = contradictions(reference, [], "Prints are dispatched the next day, guaranteed.")
    assert reasons == ["claims 'guaranteed', which the reference denies"]
    assert not contradictions(reference, [], "Usually the next day, though that's not guaranteed.")


@pytest.mark.parametrize(
    ("reference", "conflict"),
    [
        ("Hires booked on the day must be paid in full when you collect the bike.", False),
        ("Hires booked on the day need a £20 deposit when you collect the bike.", True),
    ],
)  # fmt: skip
def test_everything_says_in_full_again(reference: str, conflict: bool) -> None:
    answer = "If you book on the day, you pay everything when you collect the bike."
    assert any("everything" in reason for reason in contradictions(reference, [], answer)) is conflict


def test_a_yes_no_question_may_follow_a_condition() -> None:
    question = "If I miss my ski lesson, can I get the money back?"
    assert is_polar(question)
    reasons = contradictions("No. Missed lessons are not refunded.", [], "Yes, we refund half.", question)
    assert "answers yes where the reference answers no" in reasons


@pytest.mark.parametrize(
    ("answer", "polarity"),
    [
        ("It'll go flat after about a day, yes.", 0),  # another predicate than the one asked about
        ("It'll stay fresh for two days.", 1),
        ("It won't stay fresh past a day.", -1),
    ],
)  # fmt: skip
def test_an_echo_says_yes_only_of_the_predicate_asked_about(answer: str, polarity: int) -> None:
    assert opening_polarity(answer, "Will the sourdough stay fresh for two days?") == polarity


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [("It comes in 64GB or 128GB.", True), ("It comes in 64GB.", False)],
)  # fmt: skip
def test_one_more_option_beside_the_only_one(answer: str, conflict: bool) -> None:
    assert bool(contradictions("The loan tablet comes in 64GB only.", [], answer)) is conflict


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        # the reference limits the tours itself: saying so again narrows nothing
        ("Tours are only for groups that book ahead.", False),
        ("Group visits can only be booked by phone.", True),
    ],
)  # fmt: skip
def test_an_only_the_reference_sets_itself_is_said_again(answer: str, conflict: bool) -> None:
    reference = "Tours are only for groups that book ahead. Group visits can be booked online every day."
    assert bool(contradictions(reference, [], answer)) is conflict


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Adult members also need a photo ID dated within the past 5 years.", False),
        ("Adult members also need a utility bill from the past 3 months.", True),
    ],
)  # fmt: skip
def test_the_past_n_years_extends_nothing(answer: str, conflict: bool) -> None:
    reference = "Junior and adult members also need a photo ID dated within the last 5 years."
    assert bool(contradictions(reference, [], answer, "What do I need to join the tool library?")) is conflict


@pytest.mark.parametrize(
    ("reference", "conflict"),
    [
        ("If we cancel a course, the household chooses a refund or a later date.", False),
        ("If we cancel a course, the school decides whether to refund or rebook you.", True),
    ],
)  # fmt: skip
def test_the_household_is_the_customer(reference: str, conflict: bool) -> None:
    answer = "If we cancel, you choose a refund or a later date."
    assert any("choose" in reason for reason in contradictions(reference, [], answer)) is conflict


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("If 4 or more lessons are missed, we give a credit.", True),
        ("If 3 or more lessons are missed, we give a credit.", False),
        ("Miss 4 lessons in a term and nothing is credited.", False),  # no threshold of the reference's
    ],
)  # fmt: skip
def test_a_threshold_in_a_condition_against_the_references(answer: str, conflict: bool) -> None:
    reference = "Only if 3 or more lessons in a term are missed is a credit given."
    reasons = [r for r in contradictions(reference, [], answer) if "condition" in r]
    assert bool(reasons) is conflict


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Your booking fee is refunded.", True),
        ("Your booking fee is forfeited, I'm afraid.", False),
        ("The fee isn't refunded.", False),  # a negated clause is not read
        ("Your hire deposit is refunded.", False),  # another thing
    ],
)  # fmt: skip
def test_opposite_outcomes(answer: str, conflict: bool) -> None:
    reference = "If you cancel within 48 hours, the booking fee is forfeited."
    assert bool(opposite_outcomes(reference, answer)) is conflict


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("The large loaf is £3.50 + £1 = £4.50.", False),
        ("The large loaf is £3.50 + £2 = £5.50.", True),  # a wrong result is no working
        ("The large loaf is £3.50 + £1 = £5.", True),  # arithmetic that does not hold
    ],
)  # fmt: skip
def test_the_working_of_a_right_sum(answer: str, conflict: bool) -> None:
    reference = "Slicing adds £1, so the large loaf comes to £4.50."
    assert bool(contradictions(reference, [], answer)) is conflict


@pytest.mark.parametrize(
    ("answer", "new"),
    [
        ("It's £15 per day, so for 5 days you'd pay £75.", []),
        ("It's £15 per day, so for 5 days you'd pay £80.", ["80 gbp"]),
    ],
)  # fmt: skip
def test_a_price_worked_from_the_answers_own_count(answer: str, new: list[str]) -> None:
    assert new_prices("How much is ski hire?", "Ski hire is £15 per day.", [], answer) == new


@pytest.mark.parametrize(
    ("reference", "claimed"),
    [
        ("Lessons are in English. Practice quizzes are free.", False),
        ("Practice quizzes are usually free.", True),  # the reference hedges it
        ("Practice quizzes are free on the Plus plan only.", True),
    ],
)  # fmt: skip
def test_always_adds_nothing_to_a_plain_sentence(reference: str, claimed: bool) -> None:
    reasons = contradictions(reference, [], "Practice quizzes are always free.")
    assert any("always" in reason for reason in reasons) is claimed


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Don't worry: we contact the organiser for you on your behalf.", True),
        ("We don't contact the organiser on your behalf.", False),
    ],
)  # fmt: skip
def test_dont_worry_denies_nothing(answer: str, conflict: bool) -> None:
    reference = "You must get the organiser's approval yourself. We do not contact organisers on your behalf."
    assert bool(denial_conflicts("", reference, answer)) is conflict


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Cards are taken, and vouchers are fine too.", True),
        ("Cards are taken; vouchers aren't.", False),
    ],
)  # fmt: skip
def test_fine_accepts(answer: str, conflict: bool) -> None:
    reference = "Vouchers are not accepted. We take cards and cash."
    assert bool(denial_conflicts("", reference, answer)) is conflict
