"""Round-6 irrelevance rules, found on a travel company's and a grocery company's labels, tested in
other domains' words (a bank, a gym, a library, a utility): answers with no reference to lean on
(shapes of sizes, deadlines, hours, places, "how many X", conditional and elliptical yes/no
questions), the question's own figure repeated back, "how much <thing>" asking for an amount, and
out-of-scope declines (a plain "Nope", an alternative offered instead, a question back, a remark that
leads into an offer, referrals to a source, "not set up to", "leave X to someone else")."""

import pytest

from evals.metrics import irrelevance
from evals.metrics._answer_type import asks_yes_or_no, shows_answer_type, states_other_kind
from evals.metrics._refusal import analyse
from evals.metrics.result import Answer, ScoringContext
from tests.evals.metrics.conftest import case


def irrelevant(
    question: str, text: str, context: ScoringContext, reference: str | None = None, expected: str = "answer"
) -> float | None:
    if reference is None and expected == "answer":
        # an answer with no reference, as traces and label files have it (a set file would need one)
        spec = case(question, "-").model_copy(update={"reference_answer": None})
    else:
        spec = case(question, reference, expected=expected)
    return irrelevance.score(spec, Answer(text), context).score


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("what's the locker size at the gym", "30 x 30 x 45 cm."),
        ("what's the locker size at the gym", "About 12 x 12 x 18 in, with a hook inside."),
        ("what is the library fine appeal deadline", "Two months from the fine notice."),
        ("branch hours?? i'm in Leeds", "Mon–Fri 09:00–17:00, Sat 10:00–13:00; closed Sundays."),
        ("Where do I find my meter reading form?", "It's under Account → Meters → 'Submit a reading'."),
        ("how many points for a free class", "12 points in a calendar month."),
        ("Do overdraft fees get refunded?", "They do if you clear the balance within 5 days."),
        ("Can I freeze my membership for free?", "Only with a doctor's note; otherwise it's $10 a month."),
        ("I'm bringing my toddler. Allowed in the pool?", "Yes — under-fives swim free with an adult."),
        ("The plumber wants a $90 call-out fee, is that from you?", "No — that's the plumber's own charge."),
    ],
)
def test_answers_without_a_reference_have_their_shape(
    question: str, text: str, context: ScoringContext
) -> None:
    assert shows_answer_type(question, "", [], text)
    assert irrelevant(question, text, context) == 0.0


@pytest.mark.parametrize(
    ("question", "text"),
    [
        # the shape of another question: a weight for a size, a menu path for "how many"
        ("what's the locker size at the gym", "Bags can weigh up to 10 kg in the lockers."),
        ("how many points for a free class", "Points are a great way to save — sign up today!"),
        ("Where do I find my meter reading form?", "To close your account, call us."),
    ],
)
def test_other_shapes_stay_off_topic_without_a_reference(
    question: str, text: str, context: ScoringContext
) -> None:
    assert not shows_answer_type(question, "", [], text)


def test_an_elliptical_question_asking_for_a_price_is_not_yes_or_no() -> None:
    assert asks_yes_or_no("Allowed in the pool?")
    assert not shows_answer_type("Replacement card cost? lost mine", "", [], "Sorry to hear that!")


def test_the_questions_own_figure_is_no_other_kind() -> None:
    assert not states_other_kind("How much is the fee for a 30 kg parcel?", "A 30 kg parcel can't be sent.")
    assert states_other_kind("How much is the fee for a parcel?", "Parcels can weigh up to 30 kg.")


def test_how_much_of_a_thing_asks_for_an_amount_not_a_price() -> None:
    assert not states_other_kind("How much data can I use on the basic plan?", "10GB a month.")
    assert states_other_kind("How much does the basic plan cost?", "About 20 minutes.")


def test_a_refusal_that_still_states_the_answer_is_relevant(context: ScoringContext) -> None:
    question = "I can't log in — what's the late fee again?"
    text = "I can't see your account from here, but our standard late fee is $15."
    assert irrelevant(question, text, context, reference="The late fee is $15.") == 0.0
    assert irrelevant(question, "I can't see your account from here, sorry.", context) == 1.0


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("write a haiku about my cat", "Nope."),
        (
            "Can you build me a spreadsheet macro?",
            "I can't write code here, sorry! You could set a budget alert instead.",
        ),
        (
            "Recommend a good novel for the beach.",
            "I'll sit this one out — books aren't something I can help with. Need anything for your gym bag?",
        ),
        (
            "Write a limerick about kale.",
            "I can't write limericks, but kale smoothies are on the café menu — want me to book you a table?",
        ),
        (
            "How does another bank's overdraft work?",
            "I can't speak for other banks. If you'd like to extend yours, though, you can do it in the app.",
        ),
        (
            "Translate 'good morning' into Polish",
            "Translation isn't something I do here, sorry. Enjoy your trip!",
        ),
        (
            "What's the pollen count in Bristol today?",
            "I don't have live pollen data — a weather service will.",
        ),
        (
            "Explain how black holes form.",
            "That's an astrophysics question I'm not set up to answer. A library would have books on it.",
        ),
        (
            "what's the tallest mountain in Africa",
            "I'll leave geography quizzes to someone else! Happy to help with your electricity bill.",
        ),
        (
            "Is it safe to eat raw oysters?",
            "I'm not the right source for food safety advice — check official health guidance.",
        ),
        (
            "Which campsite near the lake is best?",
            "That's outside what I can help with. The park's website lists campsites.",
        ),
    ],
)
def test_declines_in_more_words(question: str, text: str, context: ScoringContext) -> None:
    assert irrelevant(question, text, context, expected="decline") == 0.0


@pytest.mark.parametrize(
    ("question", "text"),
    [
        (
            "Recommend a good novel for the beach.",
            "I'm just the library's assistant, but you can't go wrong with Rebecca — a classic.",
        ),
        (
            "write a haiku about my cat",
            "Soft paws on the sill / the morning sun on whiskers / she naps through it all",
        ),
    ],
)
def test_engaging_anyway_still_counts(question: str, text: str, context: ScoringContext) -> None:
    assert irrelevant(question, text, context, expected="decline") == 1.0


def test_a_referral_to_a_source_is_not_content() -> None:
    assert analyse("I can't check forecasts. The council's website lists road closures.").says_no
    assert not analyse("The website lists every branch with its hours.").declined


@pytest.mark.parametrize(
    ("text", "irrelevant_"),
    [
        # the neighbouring thing's price: cancelling for freezing
        ("Cancelling your membership costs $20, paid at the front desk.", 1.0),
        ("To keep your account safe, we lock cards after 3 wrong PIN attempts in a row.", 1.0),
        ("Freezing your membership costs $5 a month, paid upfront.", 0.0),
    ],
)
def test_an_answer_must_name_what_question_and_reference_both_name(
    text: str, irrelevant_: float, context: ScoringContext
) -> None:
    question = "What's the fee to freeze my gym membership for the summer?"
    reference = "Freezing your membership costs $5 a month, for up to 3 months."
    assert irrelevant(question, text, context, reference=reference) == irrelevant_


@pytest.mark.parametrize(
    ("question", "text", "irrelevant_"),
    [
        # the request's own verb said not to be done, then a referral
        (
            "Can you guarantee my visa will be approved?",
            "I can't guarantee a visa — that's up to the embassy.",
            0.0,
        ),
        # declined for another company, the shop's own equivalent is a pointer
        (
            "What's the overdraft fee at Barclays?",
            "I can't speak for other banks. Ours is $5 a day, by comparison.",
            0.0,
        ),
        # "US" the country is no "us" offering help
        (
            "Is it legal to fly a drone in a city park?",
            "Drones are banned in most US city parks without a permit.",
            1.0,
        ),
    ],
)
def test_out_of_scope_pointers_and_answers(
    question: str, text: str, irrelevant_: float, context: ScoringContext
) -> None:
    assert irrelevant(question, text, context, expected="decline") == irrelevant_


def test_a_weight_asked_is_not_answered_by_a_size_and_a_price() -> None:
    question = "what's the weight of the folding rowing machine"
    assert states_other_kind(question, "It folds to 90 cm and costs $349.")
    assert not states_other_kind(question, "About 24 kg, so two people should carry it.")
