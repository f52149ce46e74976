"""Redaction of personal data, and reading the question from span attributes."""

import re
import subprocess
import sys

import pytest

from evallens import cases
from evallens.cases._redact import _emails
from evallens.settings import child_environment
from evallens.telemetry.messages import question_from_attribute
from tests.conftest import REPO_ROOT


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


# A question is whatever a client sent (up to the collector's 16 MiB): a long run of letters or
# digits without an "@" (a hash, a pasted blob) must not make the email pattern retry from every
# position of it. Before the fix this took about (n / 40,000)^2 * 1.7 s -- over an hour here.
LONG_RUNS = ("a" * 2_000_000, "a" * 1_000_000 + "@" + "b" * 1_000_000, "x.y" * 700_000)


@pytest.mark.parametrize("text", LONG_RUNS, ids=["letters", "at-then-letters", "dotted"])
def test_redact_is_linear_in_long_runs_without_an_email(text: str) -> None:
    code = "import sys; from evallens.cases import redact; print(len(redact(sys.stdin.read()).redactions))"
    # a liveness guard, as the collector tests' deadlines: linear is well under a second
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=child_environment({"PYTHONPATH": str(REPO_ROOT / "platform")}),
    )
    assert done.stdout.strip() == "0"


@pytest.mark.parametrize(
    "text",
    [
        "jo@x.io",
        "first.last+tag@mail.example.co.uk",
        "reply to A-B_c%d@sub-domain.org now",
        "a" * 300 + "@x.io",
    ],
)
def test_redact_still_finds_whole_emails(text: str) -> None:
    redacted = cases.redact(text)
    assert [r.kind for r in redacted.redactions] == ["email"]
    assert "@" not in redacted.text


# The pattern emails were found with before; the linear finder must find exactly what it found.
EMAIL_REGEX = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
EMAIL_TEXTS = [
    "a@b.cc.d@e.ff",
    "a@b.com-c@d.com and x@@y.io, @z.io q@r s@t.u v@w.xyz.",
    "jo@x.io,ann@y.io;bo@z.io jo@x.io.ann@y.io",
    "no email at all @ here . com",
    "x.y.z@a.b.c.d1.ee@f.gh",
    "%+-._@--.--.ab @.ab a@.ab a@b. a@b.c a@b.cd",
    "@@a@b.cd@@e@f.gh@",
]


@pytest.mark.parametrize("text", EMAIL_TEXTS)
def test_the_email_finder_finds_what_the_email_regex_found(text: str) -> None:
    assert list(_emails(text)) == [match.span() for match in EMAIL_REGEX.finditer(text)]


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("write to jané@exämple.com today", "write to [EMAIL] today"),  # internationalised addresses
        ("用户@例子.中国", "[EMAIL]"),
        ("Call (415) 555-0100 after six", "Call [PHONE] after six"),  # the area code's bracket too
        ("+1 (415) 555-0100", "[PHONE]"),
    ],
)
def test_redact_replaces_the_whole_of_an_email_or_phone_number(text: str, redacted: str) -> None:
    assert cases.redact(text).text == redacted


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("It was ordered on 2024-03-15 and is late", "It was ordered on 2024-03-15 and is late"),
        ("Delivered 15.03.2024, 03-15-24 or 3/15/2024?", "Delivered 15.03.2024, 03-15-24 or 3/15/2024?"),
        ("between 2024-03-01 - 2024-03-15", "between 2024-03-01 - 2024-03-15"),
        ("order #100234567 never came", "order #100234567 never came"),  # a numbered thing, not a phone
        # a number right after a date is still found, and digits that are no date are still a phone
        ("since 2024-03-15 020 7946 0958 rings out", "since 2024-03-15 [PHONE] rings out"),
        ("my number is 12-34-5678", "my number is [PHONE]"),
        ("card 4111 1111 1111 1111 expired 2024-03-15", "card [CARD] expired 2024-03-15"),
    ],
)
def test_dates_and_numbered_things_are_not_phone_numbers(text: str, redacted: str) -> None:
    assert cases.redact(text).text == redacted
