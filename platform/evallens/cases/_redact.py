"""Replace personal data in a question with placeholders, and say what was replaced."""

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_EMAIL_SYMBOLS = frozenset("._%+-")  # in a local part besides letters and digits of any script
_EMAIL_DOMAIN = re.compile(r"(?:[^\W_]|[.-])+\.[^\W\d_]{2,}")  # "exämple.com" and "例子.中国" too
_AT = re.compile("@")


def _emails(text: str) -> Iterator[tuple[int, int]]:
    """Where ``[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}`` matches (with letters and digits of any
    script), as ``finditer`` finds it, in linear time. That regex retries a run of local-part characters
    from each of its positions, so a long run without an "@" (a hash or blob in a client's question)
    took quadratic time: hours for 2 MB. Here each "@" looks back over its own run once."""
    position = 0
    for at in (found.start() for found in _AT.finditer(text)):
        start = at
        while start > position and (text[start - 1].isalnum() or text[start - 1] in _EMAIL_SYMBOLS):
            start -= 1
        domain = _EMAIL_DOMAIN.match(text, at + 1) if start < at else None
        if domain is not None:
            yield start, domain.end()
            position = domain.end()


def _matches(pattern: str) -> Callable[[str], Iterator[tuple[int, int]]]:
    compiled = re.compile(pattern)
    return lambda text: (match.span() for match in compiled.finditer(text))


# A calendar date written with digits: year first ("2024-03-15") or last ("15.03.2024", "03-15-24"), one
# separator throughout. Its digits and dashes look like a phone number to the phone pattern.
_DATE = re.compile(
    r"(?<![\d.-])(?:(?P<year>\d{4})(?P<s1>[-./])(?P<a>\d{1,2})(?P=s1)(?P<b>\d{1,2})"
    r"|(?P<c>\d{1,2})(?P<s2>[-./])(?P<d>\d{1,2})(?P=s2)(?:\d{4}|\d{2}))(?![\d.-]?\d)"
)


def _is_date(match: re.Match[str]) -> bool:
    first, second = (match["a"], match["b"]) if match["year"] else (match["c"], match["d"])
    day_month = sorted((int(first), int(second)))  # month and day in either order
    return 1 <= day_month[0] <= 12 and 1 <= day_month[1] <= 31


def _outside_dates(pattern: str) -> Callable[[str], Iterator[tuple[int, int]]]:
    """Matches of ``pattern`` with each date blanked out first (same length), so "2024-03-15" is never read
    as part of a phone or card number and a number written right after a date is still found."""
    compiled = re.compile(pattern)

    def spans(text: str) -> Iterator[tuple[int, int]]:
        masked = _DATE.sub(lambda date: "_" * len(date[0]) if _is_date(date) else date[0], text)
        return (match.span() for match in compiled.finditer(masked))

    return spans


# Order matters: cards before phones, so a 16-digit card is not read as a phone number. A number after
# "#" is a numbered thing (an order, a ticket), not a phone.
_PATTERNS: tuple[tuple[str, Callable[[str], Iterator[tuple[int, int]]]], ...] = (
    ("email", _emails),
    ("card", _outside_dates(r"\b(?:\d[ -]?){12,18}\d\b")),
    ("phone", _outside_dates(r"(?<![\w+(#])(?:\+|\()?\d[\d ().-]{6,}\d\b")),  # "(415) 555-0100" whole
    (
        "address",
        _matches(
            r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s+){1,3}"
            r"(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct)\b"
        ),
    ),
)


@dataclass(frozen=True)
class Redaction:
    """One piece of personal data replaced in a text: its kind and where the placeholder now sits."""

    kind: str
    start: int
    end: int
    placeholder: str


@dataclass(frozen=True)
class RedactedText:
    """A text with personal data replaced by placeholders, and what was replaced."""

    text: str
    redactions: tuple[Redaction, ...] = ()


def redact(text: str) -> RedactedText:
    """Replace emails, card numbers, phone numbers and street addresses with ``[KIND]`` placeholders."""
    found: list[tuple[int, int, str]] = []
    for kind, spans in _PATTERNS:
        for first, last in spans(text):
            if not any(start < last and first < end for start, end, _ in found):
                found.append((first, last, kind))
    pieces: list[str] = []
    redactions: list[Redaction] = []
    position = 0
    length = 0
    for start, end, kind in sorted(found):
        pieces.append(text[position:start])
        length += start - position
        placeholder = f"[{kind.upper()}]"
        redactions.append(Redaction(kind, length, length + len(placeholder), placeholder))
        pieces.append(placeholder)
        length += len(placeholder)
        position = end
    pieces.append(text[position:])
    return RedactedText("".join(pieces), tuple(redactions))
