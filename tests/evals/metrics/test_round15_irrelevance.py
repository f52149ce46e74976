"""Round-15 irrelevance mechanisms, tested in other shops' words (a gym, a garage, a library, a bike
shop, a dentist) than the pet insurer's rows they were read from, most of them asked with no reference:
"Only at renewal" and "Yes - on every plan, including Basic" answer a yes/no question, "What deposits
...?" asks for sums, "It depends on ..." answers "how much?", steps that name what the question acts on
and "filed" for "file" answer "how do I ...?", and declines that point elsewhere: an offer worded "I'm
glad to" or "I'm all ears", "Aw, congrats ..." as a pleasantry, "your vet can help with that", the
shop's own policy ("we accept every breed"), and what follows an offer."""

import pytest

from evals.metrics._answer_type import shows_answer_type
from evals.metrics._refusal import analyse
from evals.metrics.result import ScoringContext
from tests.evals.metrics.conftest import in_scope, out_of_scope


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("Can I switch my membership tier?", "Only at renewal, not mid-contract."),
        ("Does the warranty cover the battery?", "Yes - on every bike, including the kids' range."),
        ("What deposits do you take for a van hire?", "£100, £250 or £500, depending on the van."),
        ("How much is a full service for my car?",
         "It depends on the engine size and the model - the booking page quotes it in a minute."),
        ("How do I renew a library book?", "Open the app, tap Loans and pick the book you want for longer."),
        ("How do I file a complaint?", "Complaints can only be filed in writing, by post or by email."),
    ],
)  # fmt: skip
def test_on_topic_answers_with_no_reference(context: ScoringContext, question: str, text: str) -> None:
    assert in_scope(question, text, context) == 0.0


@pytest.mark.parametrize(
    ("question", "text"),
    [
        # steps, but for something else than what the question acts on
        ("How do I renew a library book?", "Open the app and tap Events to see this month's talks."),
        # "It depends" does not answer what is included
        ("What do Gold members get?", "That depends on you - only you can decide what's worth it!"),
    ],
)  # fmt: skip
def test_off_topic_answers_with_no_reference(context: ScoringContext, question: str, text: str) -> None:
    assert in_scope(question, text, context) == 1.0


def test_sums_for_what_deposits_are_the_asked_shape_only_when_asked_with_what() -> None:
    assert shows_answer_type("What deposits do you take?", "", [], "£100 or £250.")
    # a yes/no question naming a deposit still wants a yes or a no
    assert not shows_answer_type(
        "The garage wants a £50 deposit, is that from you?", "", [], "Our bookings take a 10% deposit."
    )


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("Can you help with my maths homework?",
         "That's outside what I can help with here, sorry! If you've got questions about your membership, "
         "though, I'm all ears."),
        ("Which running shoes are best for flat feet?",
         "I can't really advise on running shoes, but I'm glad to walk you through what your membership "
         "includes."),
        ("How do I stop my puppy chewing shoes?",
         "Not really my department, I'm afraid! A trainer or your vet can help with that. If you want to "
         "insure your pup, though, I can help - puppies can join from 8 weeks."),
        ("Can you suggest a name for my new puppy?",
         "Aw, congrats on the new puppy! Naming him isn't something I can help with, I'm afraid."),
        ("Which dog breed is best for a flat?",
         "I'm not the right assistant for breed advice, sorry - my job is policies. (Good news though: we "
         "accept every breed.)"),
    ],
)  # fmt: skip
def test_declines_that_point_elsewhere(context: ScoringContext, question: str, text: str) -> None:
    assert out_of_scope(question, text, context) == 0.0


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("How do I stop my puppy chewing shoes?",
         "Not really my department! Still, bitter spray on the shoes and plenty of chew toys usually work."),
        ("Which dog breed is best for a flat?",
         "I'm not the right assistant for that, sorry - but a French bulldog is a great flat dog."),
        # a refusal is no offer: what follows it answers the question
        ("Can you solve 3x + 5 = 20 for me?",
         "I can't help with homework. Still: x = 5, since 3 times 5 is 15."),
        ("How do I stop my puppy chewing shoes?",
         "I can't advise on training. Bitter spray on the shoes and chew toys stop puppies chewing."),
    ],
)  # fmt: skip
def test_declines_that_answer_anyway(context: ScoringContext, question: str, text: str) -> None:
    assert out_of_scope(question, text, context) == 1.0


def test_a_pleasantry_may_open_with_aw() -> None:
    assert analyse("Aw, congrats on the new puppy!").clauses[0].kind == "pleasantry"
    assert analyse("Aw, puppies need lots of sleep and chew toys.").clauses[0].kind == "content"
