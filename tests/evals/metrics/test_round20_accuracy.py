"""Round-20 accuracy mechanisms, tested in other shops' words (a tennis club, a bike shop, a library, a
climbing wall, a phone repairer, a gym, a ferry) than the driving school's and the boiler-cover company's
rows they were read from: a spaced em dash that breaks a sentence between two numbers, "half hour" as 30
minutes, "minus £25" as a sum taken off, "zero" denying as "no" does, a quantifier that names no condition
of a waiver, "the full ... fee" for a charge in full, a per-qualifier said again in brackets, and "no
excess" on a condition that names only what the reference charges for."""

import pytest

from evals.metrics._contradiction import contradictions
from evals.metrics._facts import Tokenised, match_facts
from evals.metrics._prices import new_charges
from evals.metrics._quantities import quantities
from evals.sets.format import Fact

Value = tuple[float, float, str]  # low, high, unit


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("A lesson is $30 — 45 minutes on court with a pro.", [(30, 30, "usd"), (45, 45, "minute")]),
        ("A service takes 5–7 days.", [(5, 7, "day")]),
        ("A service takes 5—7 days.", [(5, 7, "day")]),  # an unspaced em dash still joins a range
        ("Prices run £500 – £1,000.", [(500, 1000, "gbp")]),
    ],
)  # fmt: skip
def test_a_spaced_em_dash_breaks_between_two_numbers(text: str, values: list[Value]) -> None:
    assert [(q.low, q.high, q.unit) for q in quantities(text)] == values


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("If we cancel late you get an extra half hour free next time.", True),
        ("Each slot is a half-hour.", True),
        ("If we cancel late you get an extra hour free next time.", False),
    ],
)  # fmt: skip
def test_half_hour_is_thirty_minutes(answer: str, found: bool) -> None:
    facts: list[Fact] = [["30 minutes", "thirty minutes"]]
    _, missing = match_facts(facts, Tokenised.of(answer))
    assert (not missing) is found


def test_minus_a_sum_of_money_takes_it_off() -> None:
    [refund] = quantities("We refund the unused months minus £25 admin.")
    assert (refund.low, refund.unit) == (25, "gbp")
    [cold] = quantities("It can drop to minus 5 °C overnight.")
    assert cold.low == -5


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("- a belay check within 6 months\n- zero safety warnings", False),
        ("- a belay check within 6 months\n- safety warnings are fine", True),
    ],
)  # fmt: skip
def test_zero_denies_as_no_does(answer: str, conflict: bool) -> None:
    reference = "You need a belay check within 6 months with no safety warnings."
    assert bool(contradictions(reference, [], answer, "What do I need to lead climb?")) is conflict


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Late returns are £1 a day, and you get one late-fee waiver every year.", False),
        ("It's £1 a day; everyone gets one late-fee waiver a year, for any reason.", False),
        ("It's £1 a day, but the fee is waived for students.", True),
    ],
)  # fmt: skip
def test_a_quantifier_names_no_condition_of_a_waiver(answer: str, conflict: bool) -> None:
    reference = "Late returns cost £1 a day. Every member has one late-fee waiver per year, for any reason."
    assert bool(contradictions(reference, [], answer, "What happens if I return a book late?")) is conflict


@pytest.mark.parametrize(
    ("reference", "charged"),
    [
        ("Repairs cancelled within 24 hours are charged in full.", False),
        ("Repairs can be cancelled up to 24 hours before.", True),  # a fee of the answer's own
    ],
)  # fmt: skip
def test_the_full_fee_is_the_charge_in_full(reference: str, charged: bool) -> None:
    answer = "Inside 24 hours the full repair fee is charged."
    assert bool(new_charges("Can I cancel a repair?", reference, answer)) is charged


@pytest.mark.parametrize(("per", "conflict"), [("incident", False), ("claim", False), ("visit", True)])
def test_a_qualifier_said_again_in_brackets(per: str, conflict: bool) -> None:
    reference = "The excess is $50 per claim (per incident), paid on the day."
    answer = f"Fifty dollars per {per}, paid on the day."
    assert bool(contradictions(reference, [], answer, "What's the excess?")) is conflict


@pytest.mark.parametrize(
    ("answer", "conflict"),
    [
        ("Gold is £12 a month, and there's no excess to pay when you claim.", True),
        ("Gold is £12 a month, and there's no excess to pay when the fault is under warranty.", False),
        ("Gold is £12 a month with a £40 excess per claim.", False),
    ],
)  # fmt: skip
def test_no_excess_on_the_references_own_condition(answer: str, conflict: bool) -> None:
    reference = "Gold costs £12 a month, with a £40 excess per claim."
    assert bool(contradictions(reference, [], answer, "How much is Gold?")) is conflict
