"""Round-15 accuracy mechanisms, tested in other shops' words (a cinema, a bike shop, a library, a gym, a
bank, a garage, a vet practice) than the language school's and the pet insurer's rows they were read from:
"parent/guardian" and "€25/seat/month" read as words, an opening "Sure" as a yes, "10, 20 or 30 percent"
sharing one unit, "lapses" and "bought" stemmed as "lapse" and "buy", a fact stated plainly in one of its
wordings, what a "free" clause makes free, a requirement the reference waives too, "every extra" counted
per additional, "only covered if" limiting by a condition, "as often as you like" backed by "at any
time", a denial that holds "while" something lasts, hours given for a day the reference says is closed,
"provided" as a condition said not to matter, a duty or an inclusion the reference does not state, "not
covered on Basic" denying one plan, a period said to be waived, "She can" echoing "Can she ...?", and a
window counted from the treatment, the invoice or its receipt."""

import pytest

from evals.metrics import accuracy
from evals.metrics._contradiction import contradictions
from evals.metrics._denials import denial_conflicts
from evals.metrics._exclusive import exclusivity_conflicts
from evals.metrics._polarity import polarity_conflicts
from evals.metrics._qualifiers import qualifier_conflicts
from evals.metrics._quantities import quantities
from evals.metrics._text import match_tokens, normalise, stem
from evals.metrics.result import Answer, ScoringContext
from evals.sets.format import Fact
from tests.evals.metrics.conftest import case


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("£25/seat/month", "25 gbp per seat per month"),
        ("a parent/guardian signs", "a parent / guardian signs"),
        ("and/or", "and/or"),  # a two-letter side is no pair of words
        ("24/7", "24/7"),
        ("Sure, it's free.", "yes, it is free."),
        ("Of course! Bring it in.", "yes! bring it in."),
        ("We're sure of it.", "we are sure of it."),  # only an opening "sure" answers
        ("10, 20 or 30 percent off", "10 percent, 20 percent or 30 percent off"),
        ("3, 6 or 12 months", "3 month, 6 month or 12 month"),
        ("between 3 and 5 days", "3-5 day"),  # a range stays a range
    ],
)
def test_slashes_an_opening_sure_and_a_shared_unit_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


@pytest.mark.parametrize(
    ("words", "stems"),
    [
        ("lapses lapse purchases purchase licenses", ["lapse", "lapse", "purchase", "purchase", "license"]),
        ("boxes classes bonuses addresses", ["box", "class", "bonus", "address"]),
        ("bought paid sent kept stolen", ["buy", "pay", "send", "keep", "steal"]),
    ],
)
def test_plurals_in_se_and_irregular_past_forms_share_the_stem(words: str, stems: list[str]) -> None:
    assert [stem(word) for word in words.split()] == stems


def test_a_fact_in_a_slashed_pair_a_per_seat_price_and_a_listed_unit_is_stated(
    context: ScoringContext,
) -> None:
    guardian = case(
        "Who can pick up my 12-year-old after the holiday club?",
        "Only a parent or guardian named on the booking can collect a child.",
        [["parent", "guardian"]],
    )
    assert (
        accuracy.score(guardian, Answer("Only the parent/guardian named on the booking."), context).score == 1
    )
    seats = case(
        "How much is the team plan?",
        "The team plan is £25 per seat per month, with a minimum of 3 seats.",
        [["£25", "25 pounds"], ["3 seats", "three seats"]],
    )
    assert accuracy.score(seats, Answer("£25/seat/month, three seats minimum."), context).score == 1
    rates = case(
        "What discounts can members choose?",
        "Members choose a discount of 10%, 20% or 30% on classes, depending on their tier.",
        [["10%", "10 percent"], ["20%", "20 percent"], ["30%", "30 percent"]],
    )
    answer = Answer("Ten, twenty or thirty percent on classes, depending on your tier.")
    assert accuracy.score(rates, answer, context).score == 1


def test_an_opening_sure_states_a_yes_fact(context: ScoringContext) -> None:
    spec = case(
        "It's Sunday, can I still return my library books?",
        "Yes. The book drop outside takes returns 24/7, even when the library is closed.",
        [["yes", "can"], ["24/7", "any time", "around the clock"]],
    )
    assert (
        accuracy.score(spec, Answer("Sure, the book drop takes them around the clock."), context).score == 1
    )


@pytest.mark.parametrize(
    ("reference", "text", "conflict"),
    [
        # "lapses" and "a lapse" are one word: the reference's "lapse is not covered" denies nothing here
        ("You have a 10-day grace period; after that your membership lapses, and a lapse is not refunded.",
         "Ten days' grace, then the membership lapses.", False),
        ("Extra guest passes can't be bought while your membership is frozen.",
         "You can buy guest passes, just not while your membership is frozen.", False),
    ],
)  # fmt: skip
def test_stemmed_words_agree_with_the_reference(reference: str, text: str, conflict: bool) -> None:
    reasons = contradictions(reference, [["lapse", "lapses", "ends"]], text)
    assert bool(reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "negated"),
    [
        # "counts as used" is stated plainly; "the session ... won't come back" only reads as a denied
        # "session is used"
        ("A missed class counts as used, so the session won't come back.", False),
        ("A missed class doesn't count as used.", True),
    ],
)
def test_a_fact_is_negated_only_when_every_wording_the_answer_holds_is(text: str, negated: bool) -> None:
    reference = "Unfortunately a no-show counts as used and the session is gone."
    facts: list[Fact] = [["session is used", "counts as used", "won't come back"]]
    reasons = polarity_conflicts("Can I get my session back?", reference, facts, text)
    assert any(reason.startswith("negates") for reason in reasons) is negated, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        # the months are what the reference gives free, not the annual billing
        ("Annual Premium costs £300 instead of £360, so you save £60 - effectively two months free.", False),
        ("Annual billing costs an extra £20 admin fee.", False),  # wrong perhaps, but not free-priced
        ("Those extra months cost £30 each.", True),
    ],
)
def test_a_free_clause_makes_free_only_what_it_names(text: str, conflict: bool) -> None:
    reference = (
        "Annual billing means paying for 10 months and getting 12 (two months free). For Premium that's £300 "
        "a year instead of £360."
    )
    reasons = denial_conflicts("How much do I save paying yearly?", reference, text)
    assert any("which the reference gives free" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("Yes, adult guests don't need to be members; under-18s must be members' children.", False),
        ("Yes, and under-18s don't need a consent form.", True),
    ],
)
def test_a_requirement_the_reference_waives_too_is_not_dropped(text: str, conflict: bool) -> None:
    reference = (
        "Yes. Adult guests don't have to be members; guests under 18 must be members' children and bring a "
        "consent form."
    )
    reasons = denial_conflicts("Can I bring my adult brother?", reference, text)
    assert any("is not needed" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(("text", "conflict"), [("every extra child", False), ("every adult", True)])
def test_extra_and_additional_count_the_same_thing(text: str, conflict: bool) -> None:
    reference = "a 15% family discount on every additional (second or later) child"
    known = [(quantities(reference)[0], match_tokens(reference))]
    said = f"15 percent off {text}"
    reasons = qualifier_conflicts(quantities(said)[0], match_tokens(said), known)
    assert bool(reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("Tyre fitting is routine servicing, so it's only covered if you have the Care add-on.", False),
        ("Only tyre fitting is covered; brake work isn't.", True),  # "only" limits a thing
    ],
)
def test_only_before_a_verb_and_a_condition_limits_by_the_condition(text: str, conflict: bool) -> None:
    reference = (
        "Tyre fitting and brake work are routine servicing and are not covered by Basic. They are covered by "
        "the Care add-on."
    )
    reasons = exclusivity_conflicts(reference, text)
    assert bool(reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("reference", "text", "claimed"),
    [
        ("Switching trainer is free at any time.", "Switch trainers as often as you like.", False),
        ("You can switch trainer once a month.", "Switch trainers as often as you like.", True),
    ],
)
def test_as_often_as_you_like_is_backed_by_at_any_time(reference: str, text: str, claimed: bool) -> None:
    reasons = contradictions(reference, [], text)
    assert any("as often" in reason for reason in reasons) is claimed, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("Saturday 9am-1pm and Sunday 10am-2pm.", True),
        ("Saturday 9am-1pm; on Sundays you can still renew online from 8am to 8pm.", False),
        ("Saturday 9am-1pm, closed Sunday.", False),
    ],
)
def test_hours_for_a_day_the_reference_says_is_closed(text: str, conflict: bool) -> None:
    reference = "The branch opens Saturday 9am-1pm and is closed Sunday."
    reasons = denial_conflicts("When are you open at the weekend?", reference, text)
    assert any("which the reference says is closed" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("Within 14 days, and you get a full refund even if you've already used a session.", True),
        ("Within 14 days, and you get a full refund as long as you haven't used a session.", False),
    ],
)
def test_a_provided_condition_said_not_to_matter(text: str, conflict: bool) -> None:
    reference = "Cancel within 14 days for a full refund, provided no session has been used."
    reasons = denial_conflicts("Can I cancel my personal-training pack?", reference, text)
    assert any("even if" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("From 16 - but they must bring a signed letter from their school.", True),
        ("The MOT includes a free tyre rotation and wiper replacement.", True),
        ("From 16, and they must be 16 on the day.", False),  # the reference's own words
        ("It includes the emissions test.", False),
        ("You'll need to bring photo ID.", False),  # "need to" spells out steps; only "must" is read
    ],
)
def test_a_duty_or_an_inclusion_the_reference_does_not_state(text: str, conflict: bool) -> None:
    reference = "Members can join from 16 years old. The MOT check includes the emissions test."
    reasons = contradictions(reference, [], text, "How old do you have to be to join?")
    assert any("adds a duty or inclusion" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("Physio is covered on both Basic and Plus, up to £500 a year.", True),
        ("Physio is covered on Plus, up to £500 a year; Basic is accident-only.", False),
    ],
)
def test_one_plan_the_reference_denies_cover_on(text: str, conflict: bool) -> None:
    reference = "On the Plus plan physio is covered up to £500 a year (it is not covered on Basic)."
    reasons = denial_conflicts("Is physio covered?", reference, text)
    assert any("which the reference denies" in reason for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("There's a 30-day wait, but it's waived if your dog has had a recent vet check.", True),
        ("There's a 30-day wait before illness cover starts.", False),
    ],
)
def test_a_period_the_reference_sets_said_to_be_waived(text: str, conflict: bool) -> None:
    reference = "Illness cover starts after a 30-day waiting period."
    reasons = denial_conflicts("Is there a waiting period?", reference, text)
    assert any(reason.startswith("waives it when") for reason in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("She can sign herself up if she brings a signed form.", True),
        ("She can't; a parent has to sign her up.", False),
    ],
)
def test_a_third_person_echo_answers_yes_or_no(text: str, conflict: bool) -> None:
    question = "Can my 14-year-old daughter sign up by herself?"
    reference = "No. Members under 16 must be signed up by a parent or guardian."
    reasons = polarity_conflicts(question, reference, [], text)
    assert any("answers yes where the reference answers no" in r for r in reasons) is conflict, reasons


@pytest.mark.parametrize(
    ("reference", "text", "conflict"),
    [
        ("Claims must be sent within 60 days of the treatment date.",
         "You have 60 days, counted from the date the practice sends the invoice.", True),
        ("Claims must be sent within 60 days of the treatment date.",
         "Within 60 days of the treatment.", False),
        ("We decide within 5 working days of receiving a complete claim.",
         "Within 5 working days of the appointment.", True),
        ("We decide within 5 working days of receiving a complete claim.",
         "Within 5 working days of receipt of the full claim.", False),
    ],
)  # fmt: skip
def test_a_window_counted_from_another_event(reference: str, text: str, conflict: bool) -> None:
    reasons = contradictions(reference, [], text)
    assert any(reason.startswith("counts") for reason in reasons) is conflict, reasons
