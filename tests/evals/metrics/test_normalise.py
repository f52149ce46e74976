"""Normalisation and fact matching: what people write many ways matches; different values do not."""

import pytest

from evals.metrics._contradiction import contradictions
from evals.metrics._facts import Tokenised, find_fact, match_facts
from evals.metrics._quantities import quantities
from evals.metrics._text import normalise


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("Five to seven business days", "5-7 business day"),
        ("5–7 biz days", "5-7 business day"),
        ("5 through 7 working days", "5-7 business day"),
        ("between five and seven days", "5-7 day"),
        ("$14.95", "14.95 usd"),
        ("14.95 dollars", "14.95 usd"),
        ("USD 14.95", "14.95 usd"),
        ("$50.00", "50 usd"),
        ("$1,299", "1299 usd"),
        ("seventy-five dollars", "75 usd"),
        ("between $50 and $1,500", "50-1500 usd"),
        ("15%", "15 percent"),
        ("fifteen per cent", "15 percent"),
        ("two hundred and fifty points", "250 point"),
        ("a two-year warranty", "a 2 year warranty"),
        ("half an hour", "0.5 hour"),
        ("a year and a half", "1.5 year"),
        ("48 hrs", "48 hour"),
        ("order before 2pm", "order before 14:00"),
        ("9:30 a.m. to 5 p.m.", "9:30 to 17:00"),
        ("It’s free of charge", "it is free"),
        ("Shipping's on us", "shipping's free"),
        ("I can’t help", "i can not help"),
        ("the tent is often wet", "the tent is often wet"),  # "ten" inside words is not a number
        ("open 9 in the morning until 6 in the evening", "open 9:00 to 18:00"),
        ("9am–6pm", "9:00 to 18:00"),
        ("rated to −5 °C", "rated to minus 5 celsius"),
        ("minus five degrees Celsius", "minus 5 celsius"),
        ("it weighs under a kilo", "it weighs under 1 kg"),
        ("within the first hour", "within 1 hour"),
    ],
)
def test_normalise(written: str, canonical: str) -> None:
    assert normalise(written) == canonical


@pytest.mark.parametrize(
    ("fact", "answer"),
    [
        ("5-7 business days", "It takes five to seven business days."),
        ("5-7 business days", "Usually 5–7 days after we issue it."),
        ("$14.95", "That's 14.95 dollars per order."),
        ("15%", "a fifteen percent restocking fee"),
        ("14 days", "You have two weeks."),
        ("48 hours", "Report it within two days."),
        ("60 minutes", "within one hour of ordering"),
        ("18 months", "after a year and a half without activity"),
        ("2-year", "It has a two year warranty."),
        ("150 kg", "rated for 330 lb"),
        ("640 Wh", "a 640 watt-hour battery"),
        ("250 points", "250 bonus points in your birthday month"),
        ("delivery date", "it starts on the date of delivery"),
        ("never expire", "They don't expire."),
        (["30 days", "a month"], "You have a month to send it back."),
        (1299, "It costs $1,299."),
        ("9 am to 6 pm", "from 9 in the morning until 6 in the evening"),
        ("-5", "comfortable down to minus five"),
        ("60 minutes", "during the first hour after checkout"),
        ("cannot be refunded", "Sale items are non-refundable."),
    ],
)
def test_facts_match_in_other_wordings(fact: object, answer: str) -> None:
    assert find_fact(fact, Tokenised.of(answer)) is not None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fact", "answer"),
    [
        ("30 days", "You have 130 days."),
        ("30 days", "You have a month."),  # a month is not 30 days unless the fact says so
        ("TR-4410", "The TR-4400 is our lighter pack."),
        ("5-7 business days", "3–5 business days"),
        ("$6.95", "$6.59"),
        ("15%", "fifteen dollars"),
        ("-5", "rated to 5 °C"),  # above zero is not below it
    ],
)
def test_different_values_do_not_match(fact: object, answer: str) -> None:
    assert find_fact(fact, Tokenised.of(answer)) is None  # type: ignore[arg-type]


def test_any_of_fact_reports_its_alternatives_when_missing() -> None:
    found, missing = match_facts(
        [["30 days", "a month"], "full refund"], Tokenised.of("You get a full refund.")
    )
    assert [match.fact for match in found] == ["full refund"]
    assert missing == ["30 days | a month"]


def test_a_range_endpoint_fact_is_found_in_the_reference_range() -> None:
    reference = Tokenised.of("Klarna is available for orders between $50 and $1,500.")
    answer = Tokenised.of("Only for orders from $50 to $1,500.")
    assert find_fact("$50", answer) is None
    assert find_fact("$50", answer, reference) is not None


def test_quantities_convert_units_but_not_months_to_days() -> None:
    (weeks,), (days,), (month,) = quantities("2 weeks"), quantities("14 days"), quantities("a month")
    assert weeks.same_value(days)
    assert not month.same_value(quantities("30 days")[0])
    assert quantities("1.5 years")[0].same_value(quantities("18 months")[0])
    assert quantities("call 1-800-555-0142") == []  # phone numbers are not quantities


def test_temperatures_compare_across_scales() -> None:
    (celsius,) = quantities("-5 °C")
    (fahrenheit,) = quantities("23 °F")
    (angle,) = quantities("a 30 degree angle")
    assert celsius.low == -5 and celsius.same_value(fahrenheit)
    assert not angle.same_value(celsius)


def test_a_unit_said_once_holds_for_the_next_number() -> None:
    assert [(q.low, q.unit) for q in quantities("12 hours on high, 48 on low.")] == [
        (12, "hour"),
        (48, "hour"),
    ]
    # counts and other sentences keep their own
    assert [q.unit for q in quantities("Pick 3 colours, 2 of them dark.")] == ["colour", ""]
    assert [q.unit for q in quantities("It takes 2 days. 5 people asked.")] == ["day", "people"]


@pytest.mark.parametrize(
    ("text", "units"),
    [
        # a hyphenated modifier is two words between the number and its unit
        ("You reach the top rate after 9 claim-free years.", [(9, "year")]),
        ("It needs 3 full working weeks' notice.", [(3, "week")]),
        ("Members get 500 extra bonus points.", [(500, "point")]),
        # a bound after the number belongs to it, not to the unit of the number before
        ("60% off at 9 or more claim-free years", [(60, "percent"), (9, "year")]),
        ("£5 a month for 12 or more months", [(5, "gbp"), (12, "month")]),
        ("2 kg, or 3 or fewer parcels", [(2, "kg"), (3, "parcel")]),
    ],
)
def test_a_unit_is_found_past_modifiers_and_a_bound(text: str, units: list[tuple[float, str]]) -> None:
    assert [(q.low, q.unit) for q in quantities(text)] == units


def test_a_duration_past_a_modifier_conflicts_with_the_reference() -> None:
    reference = "The discount rises to a maximum of 60% at 9 or more claim-free years."
    wrong = "60% — which you reach after 5 claim-free years."
    assert contradictions(reference, ["60%"], wrong, "What's the most discount I can get?")
    right = "60%, once you have 9 claim-free years."
    assert contradictions(reference, ["60%"], right, "What's the most discount I can get?") == []
