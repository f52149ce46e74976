"""Replace personal data in a question with placeholders, and say what was replaced."""

import re
from dataclasses import dataclass

# Order matters: cards before phones, so a 16-digit card is not read as a phone number.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")),
    ("card", re.compile(r"\b(?:\d[ -]?){12,18}\d\b")),
    ("phone", re.compile(r"(?<![\w+])\+?\d[\d ().-]{6,}\d\b")),
    (
        "address",
        re.compile(
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
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if not any(start < match.end() and match.start() < end for start, end, _ in found):
                found.append((match.start(), match.end(), kind))
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
