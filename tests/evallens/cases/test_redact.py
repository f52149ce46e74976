"""Redaction of personal data, and reading the question from span attributes."""

import pytest

from evallens import cases
from evallens.telemetry.messages import question_from_attribute


def test_redact_replaces_each_kind_and_says_where() -> None:
    text = "Mail jo@x.io, call 020 7946 0958, card 4111 1111 1111 1111, at 12 Baker Street."
    redacted = cases.redact(text)
    assert redacted.text == "Mail [EMAIL], call [PHONE], card [CARD], at [ADDRESS]."
    assert [r.kind for r in redacted.redactions] == ["email", "phone", "card", "address"]
    for redaction in redacted.redactions:
        assert redacted.text[redaction.start : redaction.end] == redaction.placeholder


def test_redact_leaves_ordinary_numbers_alone() -> None:
    text = "Is the TR-4410 backpack 45 litres, and can I return it within 30 days?"
    assert cases.redact(text) == cases.RedactedText(text, ())


@pytest.mark.parametrize(
    ("value", "question"),
    [
        ('[{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}]', "Hi?"),
        ('[{"role": "system", "content": "Be nice"}, {"role": "user", "content": "Refund?"}]', "Refund?"),
        ("plain question", "plain question"),
        ('[{"role": "assistant", "content": "Hello"}]', None),
    ],
)
def test_question_from_attribute(value: str, question: str | None) -> None:
    assert question_from_attribute(value) == question
