"""Round-13 accuracy mechanisms, tested in other shops' words (a gym, a library, an airline, a utility,
a dentist) than the courier's and the accounting software's rows they were read from: what "only"
limits against what the other text names together (``_exclusive``), a charge named without a sum
(``_prices.new_charges``), "no A or B" denying B too, "whatever the ..." as a universal claim and its
restatements, "free" said under a condition of the answer's own, "plus $5" and "30¢" read as money,
"never goes above" as a bound, "read-only for 90 days" as no condition, and a terse answer judged by its
facts."""

import pytest

from evals.metrics import accuracy
from evals.metrics._contradiction import contradictions
from evals.metrics._exclusive import exclusivity_conflicts
from evals.metrics._prices import new_charges
from evals.metrics._text import normalise
from evals.metrics.result import Answer, ScoringContext
from tests.evals.metrics.conftest import case


@pytest.mark.parametrize(
    ("reference", "text", "conflict"),
    [
        # the reference limits it, the answer names the limit beside something else
        ("Only the account holder can request a PIN reset.",
         "Either the account holder or a joint cardholder can ask for a PIN reset.", "cardholder"),
        ("Guest passes are available on the Premium membership only.",
         "Guest passes come with Standard and Premium.", "standard"),
        ("Only the lead passenger can change the booking.",
         "Only the lead passenger can change it.", None),
        ("Guest passes are available on the Premium membership only.",
         "You need Premium for guest passes; Standard and Off-peak members can't bring guests.", None),
        # a limit of the reference's that is itself a pair is said again
        ("Lockers take Small and Medium bags only.", "Lockers only fit small and medium bags.", None),
        ("The Basic plan includes only the email and chat channels.",
         "Basic just has email and chat.", None),
        # the answer limits it where the reference names two, or says "any"
        ("Claims cover theft or accidental damage.",
         "It's for theft only; accidental damage isn't included.", "accidental damage"),
        ("Late fees apply to books or DVDs kept past the due date.",
         "Late fees are for DVDs only.", "book"),
        # what follows a verb is not read: "only applies to" limits the verb
        ("Late fees apply to books or DVDs kept past the due date.",
         "Late fees only apply to DVDs.", None),
        ("You can book a hygienist on any plan.", "Yes, but only on the Gold plan.", "any plan"),
        ("You can book a hygienist on any plan.", "Yes, on any plan — it's only £45 a visit.", None),
        ("Refunds go to a debit or credit card.", "Not only to a debit card: a credit card works too.", None),
        ("Refunds go to a debit or credit card.", "Only if you paid by card: debit or credit.", None),
    ],
)  # fmt: skip
def test_what_only_limits_against_what_is_named_together(
    reference: str, text: str, conflict: str | None
) -> None:
    reasons = exclusivity_conflicts(reference, text)
    if conflict is None:
        assert reasons == []
    else:
        assert reasons and conflict in reasons[0], reasons


@pytest.mark.parametrize(
    ("question", "reference", "text", "named"),
    [
        ("Can I freeze my membership?", "You can freeze for up to 3 months, free of charge.",
         "Yes, up to 3 months, though there's a small fee each month it's frozen.", True),
        ("What happens to returned loans?",
         "Returned laptops are checked and the deposit is refunded in full.",
         "They're checked and the deposit comes back minus a cleaning fee.", True),
        ("Is there a charge to change seats?", "Seat changes cost €12 per flight.",
         "Yes, there's a fee: €12 per flight.", False),  # the reference's own price, named a fee
        ("Can I freeze my membership?", "You can freeze for up to 3 months, free of charge.",
         "Yes, for up to 3 months, with no fee.", False),
        ("What's the late fee?", "Late returns cost 50p a day.", "It's a fee of 50p a day.", False),
    ],
)  # fmt: skip
def test_a_charge_named_without_a_sum(question: str, reference: str, text: str, named: bool) -> None:
    assert bool(new_charges(question, reference, text)) is named


@pytest.mark.parametrize(
    ("question", "reference", "facts", "text", "wrong"),
    [
        # "no A or B" denies B as well
        ("What do I need to get a library card?", "Bring a photo ID and proof of address.",
         [["proof of address", "utility bill"]],
         "Just your photo ID — no utility bill or proof of address needed.",
         True),
        # "whatever the ..." claims more than a price that starts somewhere
        ("How much is a dental check-up?", "Check-ups start at £45 for adults.", [["£45", "45 pounds"]],
         "A check-up is a flat £45 whatever the treatment.", True),
        ("Is delivery free for members?", "Members get free delivery on every order.", [["free"]],
         "Yes, members get free delivery whatever the order size.", False),
        # "everyone else" is the rest; "everything" after the reference's "all"
        ("Who has to use two-factor login?",
         "Two-factor login is required for admins and optional for other users.",
         ["admins"], "It's required for admins and optional for everyone else.", False),
        ("What should I keep after a damaged delivery?", "Keep the item and all packaging, and take photos.",
         [["packaging", "box"]], "Keep everything: the item, the box and all the packaging.", False),
        # a cap said twice is no universal claim
        ("What's the transfer fee?", "Transfers cost 1% per payment, capped at €5.",
         [["1%"], ["€5", "5 euros"]],
         "1% per transfer, and it never goes above €5 no matter how much you send.", False),
        # "free" under a condition the reference never sets
        ("Is weekend delivery available?", "Saturday delivery is available for £6 extra.",
         [["£6", "6 pounds"]],
         "Saturday delivery is £6 extra, but free if you order before Wednesday.", True),
        # "plus $5" is five dollars, and "30¢" thirty cents
        ("What does a card payment cost?", "Card payments cost 2.5% + $0.30 each.",
         [["2.5%"], ["$0.30", "30 cents"]],
         "2.5% plus $0.30 per payment.", False),
        ("What does a card payment cost?", "Card payments cost 2.5% + $0.30 each.",
         [["2.5%"], ["$0.30", "30 cents"]],
         "2.5% + 30¢ per payment.", False),
        # "read-only for three months" sets no condition
        ("What happens when I cancel?", "Your account stays read-only for 90 days, then it is deleted.",
         [["90 days", "three months"], ["deleted"]],
         "It's read-only for three months and then deleted.", False),
    ],
)  # fmt: skip
def test_round13_verdicts_in_other_shops(
    question: str, reference: str, facts: list[object], text: str, wrong: bool, context: ScoringContext
) -> None:
    scored = accuracy.score(case(question, reference, facts), Answer(text), context)
    assert (scored.score == 0.0) is wrong, scored.reason


def test_a_terse_answer_is_judged_by_its_facts(context: ScoringContext) -> None:
    question = "How many guest passes do I get a month on Premium?"
    reference = "Premium members get 4 guest passes every calendar month; unused passes don't roll over."
    passes = case(question, reference, [["4", "four"]])
    scored = accuracy.score(passes, Answer("Four 👍"), context)
    assert scored.score == 1.0 and "terse" in scored.reason, scored.reason
    assert accuracy.score(passes, Answer("Three 👍"), context).score == 0.0


def test_money_words_and_signs() -> None:
    assert normalise("plus $0.30") == "plus 0.3 usd"
    assert normalise("2.5% + 30¢") == "2.5 percent + 0.3 usd"
    assert normalise("US$ 12") == "12 usd"


def test_the_reference_limit_is_named_in_the_reason() -> None:
    reasons = contradictions(
        "Only the policyholder can make a claim.", [], "The policyholder or the other driver can claim."
    )
    assert "names 'driver other' where the reference limits it to 'policyholder'" in reasons, reasons
