"""Round-19 accuracy mechanisms, tested in other shops' words (a climbing wall, a library, a ferry, a print
shop, a car wash, a co-op, a cinema) than the gym chain's and the photo-backup service's rows they were read
from: a bare hour or range of hours found as clock times, an informal "nope", a flat fee backing "no matter
how big", "doesn't remove anything" backing "everything", a date after "every" naming no one, a second
condition after "or if", and an "only" that limits to some of a kind what the reference says of every one."""

import pytest

from evals.metrics._contradiction import contradictions
from evals.metrics._exclusive import exclusivity_conflicts
from evals.metrics._facts import Tokenised, match_facts
from evals.metrics._text import normalise
from evals.sets.format import Fact


@pytest.mark.parametrize(
    ("facts", "answer", "found"),
    [
        ([["4", "4-8"]], "Juniors climb on weekdays 4–8 pm.", True),
        ([["4-8"]], "Juniors climb on weekdays from 4 to 8 pm.", True),
        ([["10", "ten"]], "Story time runs 10–11 am on Saturdays.", True),
        ([["4-8"]], "Juniors climb on weekdays 5–8 pm.", False),  # another start
        ([["10"]], "Story time runs 9–11 am.", False),
    ],
)  # fmt: skip
def test_a_bare_hour_is_found_as_a_clock_time(facts: list[Fact], answer: str, found: bool) -> None:
    _, missing = match_facts(facts, Tokenised.of(answer))
    assert (not missing) is found


@pytest.mark.parametrize("opening", ["Nope", "Nah"])
def test_an_informal_no_opens_as_no(opening: str) -> None:
    answer = f"{opening}, anyone with the ticket can board without an account."
    assert normalise(answer).startswith("no,")
    _, missing = match_facts([["no", "not needed"]], Tokenised.of(answer))
    assert not missing


@pytest.mark.parametrize(
    ("reference", "claimed"),
    [
        ("Shipping to Ireland is a flat €8.", False),
        ("Shipping to Ireland is €8 for orders up to 2 kg.", True),
    ],
)  # fmt: skip
def test_a_flat_fee_is_the_same_no_matter_how_big(reference: str, claimed: bool) -> None:
    reasons = contradictions(reference, [], "It's €8, no matter how big the order is.")
    assert any("no matter" in reason for reason in reasons) is claimed


@pytest.mark.parametrize(
    ("reference", "claimed"),
    [
        ("Uploads pause over the limit, and we don't remove anything you already have.", False),
        ("Uploads pause over the limit; older drafts may be removed after 30 days.", True),
    ],
)  # fmt: skip
def test_removing_nothing_backs_everything_stays(reference: str, claimed: bool) -> None:
    reasons = contradictions(reference, [], "Uploads pause, and everything you already have stays.")
    assert any("everything" in reason for reason in reasons) is claimed


def test_a_date_after_every_names_no_one() -> None:
    reference = "The $15 membership fee is charged every 1 April to monthly members (not to annual members)."
    reasons = contradictions(reference, [], "It's the yearly fee; everyone pays it, annual members included.")
    assert "claims 'everyone', which the reference does not say" in reasons
    assert not contradictions(
        "Every member pays the $15 yearly fee.", [], "Everyone pays the $15 yearly fee."
    )


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("The wash fee is waived if you buy the annual pass, or if you show a student card.", True),
        ("The wash fee is waived if you buy the annual pass, or if you pay for the year up front.", False),
    ],
)  # fmt: skip
def test_a_second_condition_after_or_if(answer: str, conflict: bool) -> None:
    reference = "The $5 wash fee is waived if you buy the annual pass and pay for the year up front."
    assert bool(contradictions(reference, [], answer, "Is there a wash fee?")) is conflict


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Member discounts are only available on premium tickets.", True),
        ("Member discounts apply to every ticket, and popcorn is only on weekends.", False),
        ("Only members get the discount, on any ticket.", False),
    ],
)  # fmt: skip
def test_only_some_of_what_the_reference_says_of_every_one(answer: str, conflict: bool) -> None:
    reference = "Members get 10% off every ticket."
    assert bool(exclusivity_conflicts(reference, answer)) is conflict
