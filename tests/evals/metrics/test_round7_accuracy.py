"""Round-7 accuracy rules, which came from a bank's labels, tested in other shops' words (a gym, a
library, an airline, a utility): how ranges, pounds and day names are written, "the next working day",
what "each time" is counted per, the other of two values picked, limitless claims and conditions the
reference never sets."""

import pytest

from evals.metrics._contradiction import contradictions
from evals.metrics._facts import Tokenised, match_facts
from evals.metrics._text import normalise
from evals.sets.format import Fact


def _missing(facts: list[Fact], answer: str, reference: str) -> list[str]:
    return match_facts(facts, Tokenised.of(answer), Tokenised.of(reference))[1]


def test_a_range_of_large_values_is_no_phone_number() -> None:
    reference = "Corporate gym memberships cost from £1,200 to £25,000 a year."
    facts: list[Fact] = [["£1,200", "1200"], ["£25,000", "25000"]]
    assert _missing(facts, "Between £1,200 and £25,000 a year, depending on headcount.", reference) == []
    assert _missing(facts, "Call 0161-4960000 to ask.", reference) != []


def test_pounds_are_sterling_where_the_reference_weighs_nothing() -> None:
    reference = "Library fines run from £2 to £15 per item."
    facts: list[Fact] = [["£2", "2"], ["£15", "15"]]
    assert _missing(facts, "Fines are between two and fifteen pounds an item.", reference) == []
    # a reference that weighs things keeps "pounds" a weight
    weighed = "Checked bags cost £15 and may weigh up to 50 lb."
    assert _missing([["£15"]], "Bags may weigh fifteen pounds.", weighed) != []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Open Mon-Fri 6am to 10pm", "open monday friday 6:00 to 22:00"),
        ("Sat 09:00-13:00", "saturday 9:00 to 13:00"),
        ("Tue to Thu", "tuesday to thursday"),
        ("We sat down on the sun deck", "we sat down on the sun deck"),
    ],
)
def test_short_day_names_where_hours_or_another_day_follow(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_the_next_working_day_is_one_working_day() -> None:
    reference = "Meter faults are fixed by the end of the next working day."
    facts: list[Fact] = [["next working day", "next business day"]]
    assert _missing(facts, "By close of the following business day.", reference) == []
    assert contradictions(reference, facts, "Within 3 working days.") != []
    # "next week" is a date, not a week-long wait
    assert normalise("we call you next week") == "we call you next week"


def test_instantly_is_what_an_instant_booking_does() -> None:
    reference = "Seat changes in the app are free and instant."
    assert contradictions(reference, [], "They're free and take effect instantly.") == []
    assert contradictions("Seat changes in the app are free.", [], "Free, and they apply instantly.") != []


def test_a_limitless_claim_needs_a_reference_that_sets_no_limit() -> None:
    reference = "Members can book unlimited classes."
    assert contradictions(reference, [], "There's no limit on how many classes you book.") == []
    assert contradictions(reference, [], "Book as many classes as you like.") == []
    capped = "Members can book 3 classes a week."
    assert contradictions(capped, [], "3 a week, and you can cancel as many as you like.") != []
    assert contradictions(capped, [], "3 a week, and there's no limit on guest passes.") != []


def test_each_time_is_per_the_event_not_per_a_period() -> None:
    reference = "Renewing a book online costs £0.50 per renewal."
    assert contradictions(reference, [], "It's £0.50 each time you renew.") == []
    monthly = "Locker hire costs £0.50 per month."
    assert contradictions(monthly, [], "Locker hire is £0.50 each time.") != []


def test_calendar_days_said_again_after_the_value() -> None:
    reference = "Refunds for cancelled flights take 7 working days."
    facts: list[Fact] = [["7 working days"]]
    assert contradictions(reference, facts, "About 7 days, calendar days not working days.") != []
    assert contradictions(reference, facts, "About 7 days, working days not calendar days.") == []


def test_the_other_of_two_values() -> None:
    reference = "The late payment charge is the greater of £5 or 3% of the bill."
    assert contradictions(reference, [], "It's whichever is lower: £5 or 3% of the bill.") != []
    assert contradictions(reference, [], "It's whichever is higher of £5 or 3% of the bill.") == []
    assert contradictions(reference, [], "£5 or 3% of the bill, whichever is greater.") == []


def test_a_condition_the_reference_never_sets() -> None:
    reference = "Day passes cost £12 and include sauna access."
    assert contradictions(reference, [], "£12, but only if you book before noon.") != []
    assert contradictions(reference, [], "£12, and only if you want sauna access is it included.") == []
    # "for as long as" gives a duration, it sets no condition
    assert (
        contradictions("You can freeze a membership for up to 90 days.", [], "For as long as 90 days.") == []
    )


def test_a_bare_number_counted_from_a_later_event() -> None:
    reference = "Warranty claims must be made within 24 months of the purchase date."
    facts: list[Fact] = [["24"]]
    assert contradictions(reference, facts, "24 months from when you first notice the fault.") != []
    assert contradictions(reference, facts, "24 months from the purchase, even if you notice it later.") == []


def test_a_rule_stretched_to_something_the_reference_never_names() -> None:
    reference = "The off-peak membership gives gym access before 4 pm on weekdays."
    assert contradictions(reference, [], "Gym access before 4 pm, and it covers the swimming pool too.") != []
    # an extra feature is no rule stretched, nor is a rule restated for what the reference names
    assert contradictions(reference, [], "Gym access before 4 pm, with a free towel as well.") == []
    assert contradictions(reference, [], "Before 4 pm on weekdays, and that applies to gym access too.") == []
