"""Accuracy: facts in any wording pass; contradictions, negations and non-answers fail, with evidence."""

import pytest

from evals.metrics import accuracy
from evals.metrics._contradiction import contradictions
from evals.metrics.result import Answer, ScoringContext
from tests.evals.metrics.conftest import case

RETURNS = case(
    "How long do I have to return an item?",
    "You can return items within 30 days of delivery; the window starts on the delivery date.",
    ["30 days"],
)
REFUND = case(
    "When will the refund reach my Visa?",
    "Refunds to credit and debit cards take 5–7 business days after the refund is issued.",
    ["5-7 business days"],
)
FILTER = case(
    "Does the bottle filter remove viruses?",
    "No. It removes bacteria and protozoa but does not remove viruses.",
    ["viruses"],
)
CARE = case(
    "What does the protection plan cover?",
    "It adds 2 years of defect cover and accidental damage. Loss and theft are not covered; no cash payouts.",
    ["accidental damage"],
)
LABEL = case(
    "Do I pay for the return label if my item is faulty?",
    "No. Return labels are free for defective, damaged or wrong items; otherwise the label costs $6.95.",
    ["free"],
)


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        (RETURNS, "You have thirty days from the delivery date to send it back."),
        (RETURNS, "Good news — you’ve got a 30-day return window, counted from delivery!"),
        (RETURNS, "I believe it's 30 days from delivery, as long as the item is unused."),
        (REFUND, "Once it's issued, expect it within five to seven business days."),
        (REFUND, "5–7 business days after it's issued, so excluding weekends."),
        (REFUND, "Card refunds take 5–7 days. If it's been longer than 10 business days, contact us."),
        (RETURNS, "Thirty days after your order is delivered."),
        (LABEL, "No, it's free of charge for faulty items."),
        (FILTER, "Sadly not — bacteria and protozoa yes, viruses no."),
        (CARE, "Accidental damage, on top of 2 more years of defect cover. Loss or theft isn't included."),
        # the user's own figure repeated back is not a claim about the policy
        (
            case(
                "Is shipping free if I spend $90?",
                "Yes, standard shipping is free on orders of $75 or more.",
                ["$75"],
            ),
            "Yes! It's free from $75, so a $90 order qualifies.",
        ),
        # a second value about another thing, named by a word the question and reference never use
        (
            case("What's the limit temperature of the bag?", "Its limit temperature is -7 °C.", ["-7"]),
            "Limit: minus seven degrees Celsius. Its comfort rating is −1 °C.",
        ),
        # "on every order" says which orders, not when the window starts
        (
            case(
                "How long is my return window as a member?",
                "Members get 60 days on every order.",
                ["60 days"],
            ),
            "Sixty days from delivery, on every order.",
        ),
        (
            case("Do gift cards expire?", "No, gift cards never expire.", [["never expire", "no expiry"]]),
            "Nope, they're good forever, no expiry date.",
        ),
        (
            case("Is the bag below one kilo?", "The bag weighs 0.8 kg.", ["0.8 kg"]),
            "Yes, it is under a kilo: 0.8 kg.",
        ),
    ],
)
def test_correct_answers_in_any_wording(context: ScoringContext, spec: object, text: str) -> None:
    result = accuracy.score(spec, Answer(text), context)  # type: ignore[arg-type]
    assert result.score == 1.0, result.reason


@pytest.mark.parametrize(
    ("spec", "text", "evidence"),
    [
        (RETURNS, "You can return items within 14 days of delivery.", "missing facts: 30 days"),
        (RETURNS, "It's not 30 days anymore, the policy changed.", "negates '30 days'"),
        (RETURNS, "It's 30 days. Also, return shipping is always free.", "claims 'always'"),
        (REFUND, "It's 5–7 business days, or 3 business days for Visa cards.", "says 3 day"),
        (LABEL, "It is not free, you pay $6.95.", "negates 'free'"),
        (RETURNS, "I'm sorry, I can't look that up.", "missing facts"),
        (RETURNS, "Tents are 30 days. Wait, no: you have 60 days to return anything.", "says 60 day"),
        (
            RETURNS,
            "30 days from the order date.",
            "counts 30 day from the order where the reference counts from the delivery",
        ),
        (
            FILTER,
            "It handles bacteria, protozoa and viruses.",
            "affirms 'viruses', which the reference denies",
        ),
        (
            case(
                "Can I ship the power station abroad?",
                "No. Batteries over 100 Wh cannot ship abroad.",
                ["100 Wh"],
            ),
            "Yes, it ships abroad; batteries over 100 Wh just take longer.",
            "answers yes where the reference answers no",
        ),
        (CARE, "It covers accidental damage, as well as loss and theft.", "states 'cover, loss, theft'"),
        (CARE, "Accidental damage, and you can take it in cash.", "states 'cash'"),
        (
            case("When will I hear back?", "You get a written answer within 14 calendar days.", ["14 days"]),
            "Expect a written answer within 14 business days.",
            "in business days where the reference counts calendar days",
        ),
        (
            case("How heavy is the pack?", "The pack weighs 1.6 kg.", ["1.6 kg"]),
            "It weighs 1.6 kg, so it is under a kilo with the lid off.",
            "says at most 1 kg",
        ),
        (REFUND, "5–7 business days. Actually, scratch that: expect 10 business days.", "says 10 day"),
        (RETURNS, "30 days from delivery, and unopened items can be returned for life.", "claims 'for life'"),
        (
            case("How long does the lantern run?", "12 hours on high and 48 hours on low.", ["12 hours"]),
            "12 hours on high, 24 on low.",
            "says 24 hour where the reference says",
        ),
        (
            REFUND,
            "5–7 business days, weekends included.",
            "counts the weekend where the reference counts business",
        ),
    ],
)
def test_wrong_answers_fail_with_the_evidence(
    context: ScoringContext, spec: object, text: str, evidence: str
) -> None:
    result = accuracy.score(spec, Answer(text), context)  # type: ignore[arg-type]
    assert result.score == 0.0
    assert evidence in result.reason


def test_a_fact_in_an_unrelated_answer_fails_below_the_similarity_threshold(context: ScoringContext) -> None:
    strict = ScoringContext(similarity=context.similarity, similarity_threshold=0.5)
    result = accuracy.score(
        RETURNS, Answer("30 days of sunshine await you on our hiking trips to Spain."), strict
    )
    assert result.score == 0.0 and "similarity to the reference or question" in result.reason


def test_negated_fact_that_the_reference_negates_too_is_consistent() -> None:
    reference = "No, gift cards do not expire."
    assert contradictions(reference, ["not expire"], "They don't expire, ever.") == []


def test_a_bound_is_not_a_negation() -> None:
    assert (
        contradictions(RETURNS.reference_answer or "", ["30 days"], "You can't return it after 30 days.")
        == []
    )


def test_quantities_about_other_things_do_not_conflict() -> None:
    text = "You have 30 days to return it, and the refund then takes 5-7 business days."
    assert contradictions(RETURNS.reference_answer or "", ["30 days"], text) == []


def test_not_applicable_and_failed(context: ScoringContext) -> None:
    out_of_scope = case("Who won the 1998 World Cup?", expected="decline")
    assert not accuracy.score(out_of_scope, Answer("France."), context).applies
    failed = accuracy.score(RETURNS, Answer(None, error="HTTP 500"), context)
    assert (failed.score, failed.reason) == (0.0, "request failed: HTTP 500")


def test_near_threshold_verdicts_are_marked_unsure(context: ScoringContext) -> None:
    text = "You have thirty days from the delivery date to send it back."
    similarity = max(
        context.similarity.similarity(RETURNS.reference_answer or "", text),
        context.similarity.similarity(RETURNS.prompt_text(), text),
    )
    just_above = ScoringContext(similarity=context.similarity, similarity_threshold=similarity - 0.01)
    far_below = ScoringContext(similarity=context.similarity, similarity_threshold=similarity - 0.3)
    assert accuracy.score(RETURNS, Answer(text), just_above).unsure
    assert not accuracy.score(RETURNS, Answer(text), far_below).unsure


@pytest.mark.parametrize(
    ("question", "reference", "text"),
    [
        # a denial scoped by what it is for does not deny the thing in general
        (
            "Do I get compensation for a snow delay?",
            "No. There is no compensation for weather delays.",
            "Compensation is a goodwill gesture for the inconvenience.",
        ),
        # what the reference denies, mentioned without the denied verb
        (
            "What can't be returned?",
            "Gift cards and items marked Final Sale cannot be returned.",
            "Final Sale items are still covered by the standard warranty.",
        ),
        # a condition limits the claim instead of contradicting the denial
        (
            "Can I return a used tent?",
            "Used tents cannot be returned unless they are defective.",
            "Used tents can only be returned if they are defective.",
        ),
        # "you can" echoes "can", not "do"
        (
            "Do I have to pay for the ombudsman?",
            "No, the ombudsman is free for customers.",
            "You can refer a complaint to the ombudsman after 8 weeks.",
        ),
    ],
)
def test_denials_read_with_their_scope(question: str, reference: str, text: str) -> None:
    assert contradictions(reference, [], text, question) == []
