"""Finding required facts in an answer, in any common wording (see ``_text.normalise``).

A fact is a string or number, or a list of alternatives any one of which satisfies it. An
alternative is found when its normalised words appear in order, when it is a quantity the answer
states with the same value in any unit ("two weeks" for "14 days"), when its words appear in order with
their endings dropped ("pre-authorise" for "pre-authorised"), when all of its content words appear
close together ("date of delivery" for "delivery date"; never for a fact with a number, which
needs that number), or, for a denial such as "no viruses", when one clause names its words and
denies something ("viruses are NOT filtered out"). "Pounds" are sterling where a sterling fact is
wanted and the reference weighs nothing. ``match_facts`` also finds a fact in looser words: a
possessive, "cancelled" for "cancel", a word the fact cut short of the reference's ("third part"), a
bare number at the end of the reference's own range. One single value states one fact: "36 inches"
(91 cm) is not also a depth of "91 cm"; a range may state two ("from $50 to $1,500").
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from evals.metrics._quantities import Quantity, quantities_in
from evals.metrics._text import BOUNDARY, match_tokens
from evals.sets.format import Fact, FactItem

STOPWORDS = frozenset(
    [
        "a", "an", "the", "of", "to", "in", "on", "at", "for", "by", "with", "from", "and", "or", "is",
        "are", "be", "been", "it", "its", "this", "that", "these", "those", "your", "you", "we", "our",
        "us", "i", "my", "me", "they", "their", "them", "he", "she", "his", "her", "as", "into", "than",
        "then", "so", "if", "but", "do", "does", "did", "can", "will", "would", "should", "could", "may",
        "might", "must", "has", "have", "had", "there", "here", "what", "which", "who", "whom", "how",
        "when", "where", "why", "about", "up", "out", "over", "under", "after", "before", "within", "per",
        "any", "all", "just", "also", "only", "very", "really", "more", "most", "get", "gets", "got",
    ]
)  # fmt: skip


_DENYING = frozenset(["no", "not", "without", "none"])


@dataclass(frozen=True)
class FactMatch:
    """Where one fact was found: the alternative and its token span in the answer."""

    fact: str
    start: int
    end: int


@dataclass(frozen=True)
class Tokenised:
    """A text's match tokens and the quantities in them, computed once per text."""

    words: list[str]
    quantities: list[Quantity]

    @classmethod
    def of(cls, text: str) -> "Tokenised":
        """Tokenise ``text`` for matching (cached: treat the result as read-only)."""
        return _tokenise(text)


def alternatives(fact: Fact) -> list[str]:
    """The wordings that satisfy a fact (one, or several for an any-of fact)."""
    items = fact if isinstance(fact, list) else [fact]
    return [_as_text(item) for item in items]


def fact_label(fact: Fact) -> str:
    """How a fact is named in reasons: ``30 days`` or ``30 days | a month``."""
    return " | ".join(alternatives(fact))


def find_fact(fact: Fact, answer: Tokenised, reference: Tokenised | None = None) -> FactMatch | None:
    """The first place the answer states ``fact`` (any alternative), or None.

    A value the reference gives as the end of a range ("$50" of "between $50 and $1,500") is also
    found where the answer states that same range.
    """
    for alternative in alternatives(fact):
        match = _find_alternative(alternative, answer, reference)
        if match is not None:
            return match
    return None


def names_fact(fact: Fact, text: Tokenised) -> bool:
    """The text holds one of the fact's wordings word for word ("Final Sale"; not "2 days" for "48 hours")."""
    for alternative in alternatives(fact):
        needle = [w for w in Tokenised.of(alternative).words if w != BOUNDARY]
        if needle and _find_words(needle, text.words) is not None:
            return True
    return False


def match_facts(
    facts: Sequence[Fact], answer: Tokenised, reference: Tokenised | None = None
) -> tuple[list[FactMatch], list[str]]:
    """The facts found (with where) and the labels of the facts missing."""
    found: list[FactMatch] = []
    missing: list[str] = []
    for fact in facts:
        match = find_fact(fact, answer, reference)
        if match is not None and match.start in _single_values(answer, found):
            # one value states one fact: 36 inches (91 cm) is not also a depth of "91 cm"
            match = find_fact(fact, _without(answer, _single_values(answer, found)), reference)
        match = match or _find_loosely(fact, answer, reference)
        if match is None:
            missing.append(fact_label(fact))
        else:
            found.append(match)
    return found, missing


def _find_loosely(fact: Fact, answer: Tokenised, reference: Tokenised | None) -> FactMatch | None:
    """A fact in looser words: "the other driver's name" for "other driver", "cancelled" for "cancel",
    "third parties" for "third part" where the reference says "third party", or a bare number ("21")
    at the end of a range the reference gives too ("between 21 and 79" for "aged 21-79")."""
    haystack = [_looser(w) for w in answer.words]
    for alternative in alternatives(fact):
        tokens = Tokenised.of(alternative)
        needle = [_looser(w) for w in tokens.words if w != BOUNDARY]
        for start in range(len(haystack) - len(needle) + 1) if needle else []:
            said = haystack[start : start + len(needle)]
            if said[:-1] == needle[:-1] and said[-1] in {needle[-1], *_completed(needle[-1], reference)}:
                return FactMatch(alternative, start, start + len(needle))
        hours = _on_the_clock(tokens.words, answer.words)
        if hours is not None:
            return FactMatch(alternative, hours, hours + 1)
        if len(tokens.quantities) == 1 and tokens.quantities[0].dimension == "number" and reference:
            value = tokens.quantities[0].low
            ranges = [(q.low, q.high) for q in reference.quantities if q.low < q.high]
            ranges = [span for span in ranges if value in span]
            for stated in answer.quantities:
                if (stated.low, stated.high) in ranges:
                    return FactMatch(alternative, stated.position, stated.position + 1)
    return None


_HOUR_RANGE = re.compile(r"(\d{1,2})(?:-(\d{1,2}))?")
_CLOCK_TIME = re.compile(r"(\d{1,2}):(\d{2})")


def _on_the_clock(fact: Sequence[str], words: Sequence[str]) -> int | None:
    """Where a bare hour or range of hours ("9", "3-7") stands as clock times ("9:00", "15:00 to 19:00"),
    on either half of the day: the answer's "3–7 pm" states a fact of "3-7"."""
    wanted = _HOUR_RANGE.fullmatch(fact[0]) if len(fact) == 1 else None
    if wanted is None or any(int(hour) > 12 for hour in wanted.groups() if hour):
        return None
    ends = [int(hour) % 12 for hour in wanted.groups() if hour]
    for start in range(len(words)):
        said = [words[start + 2 * i] if start + 2 * i < len(words) else "" for i in range(len(ends))]
        times = [_CLOCK_TIME.fullmatch(word) for word in said]
        joined = len(ends) == 1 or (start + 1 < len(words) and words[start + 1] == "to")
        on_time = zip(times, ends, strict=True)
        if joined and all(t is not None and int(t[1]) % 12 == end for t, end in on_time):
            return start
    return None


def _completed(stem: str, reference: Tokenised | None) -> set[str]:
    """The reference's words a fact cut short ("third part" of "third party"); none if it has the stem."""
    known = {_looser(w) for w in reference.words} if reference else set()
    if len(stem) < 4 or not stem.isalpha() or stem in known:
        return set()
    return {w for w in known if w.startswith(stem)}


def _looser(word: str) -> str:
    """ "driver's" is "driver", "cancell(ed)" is "cancel"."""
    word = word.removesuffix("'s")
    if len(word) > 5 and word.isalpha() and word[-1] == word[-2] and word[-1] not in "aeiouls":
        return word[:-1]
    return word[:-1] if len(word) > 5 and word.endswith("ll") else word


def _single_values(answer: Tokenised, found: list[FactMatch]) -> set[int]:
    """Where the facts found so far stand on a single value (a range may state two facts: "$50-1,500")."""
    starts = {m.start for m in found}
    return {q.position for q in answer.quantities if q.position in starts and q.low == q.high}


def _without(answer: Tokenised, positions: set[int]) -> Tokenised:
    """The answer with the values at ``positions`` blanked out."""
    words = ["" if i in positions else word for i, word in enumerate(answer.words)]
    return Tokenised(words, [q for q in answer.quantities if q.position not in positions])


def content_words(words: Sequence[str]) -> list[str]:
    """The words that carry meaning: no stopwords, boundaries or bare numbers."""
    return [w for w in words if w != BOUNDARY and w not in STOPWORDS and not w.replace(".", "").isdigit()]


def _as_text(item: FactItem) -> str:
    if isinstance(item, float) and item.is_integer():
        return str(int(item))
    return str(item)


def _find_alternative(alternative: str, answer: Tokenised, reference: Tokenised | None) -> FactMatch | None:
    fact = Tokenised.of(alternative)
    needle = [w for w in fact.words if w != BOUNDARY]
    if not needle:
        return None
    haystack = answer.words
    start = _find_words(needle, haystack)
    if start is not None:
        return FactMatch(alternative, start, start + len(needle))
    if len(fact.quantities) == 1 and fact.quantities[0].dimension not in {"number"}:
        wanted = fact.quantities[0]
        ranges = [q for q in (reference.quantities if reference else []) if _ends_range(q, wanted)]
        for stated in _pounds_as_money(answer.quantities, wanted, reference):
            if stated.same_value(wanted) or any(stated.same_value(known) for known in ranges):
                return FactMatch(alternative, stated.position, stated.position + 2)
    loose = _find_words([_loose(w) for w in needle], [_loose(w) for w in haystack])
    if loose is not None:  # "we pre-authorise your card" for "pre-authorised"
        return FactMatch(alternative, loose, loose + len(needle))
    return _find_words_nearby(alternative, needle, haystack) or _find_denied(alternative, needle, haystack)


def _pounds_as_money(stated: list[Quantity], wanted: Quantity, reference: Tokenised | None) -> list[Quantity]:
    """The answer's quantities, its "pounds" read as sterling where a sterling fact is wanted and the
    reference weighs nothing ("between twenty-five and three hundred pounds" a month for £25-£300)."""
    if wanted.unit != "gbp" or reference is None or any(q.dimension == "mass" for q in reference.quantities):
        return stated
    return [replace(q, unit="gbp", dimension="gbp") if q.unit == "lb" else q for q in stated]


def _loose(word: str) -> str:
    """A verb's stem whatever its ending: "authorise", "authoris(ed)" and "authorising" read the same."""
    if len(word) > 5 and word.isalpha() and word.endswith("ing"):
        return word[:-3]
    return word[:-1] if len(word) > 4 and word.isalpha() and word.endswith("e") else word


def _find_words(needle: list[str], haystack: list[str]) -> int | None:
    for start in range(len(haystack) - len(needle) + 1):
        if haystack[start : start + len(needle)] == needle:
            return start
    return None


def _ends_range(known: Quantity, value: Quantity) -> bool:
    if known.low == known.high or known.dimension != value.dimension:
        return False
    return value.low == value.high and value.base()[0] in known.base()


def _find_words_nearby(alternative: str, needle: list[str], haystack: list[str]) -> FactMatch | None:
    """All content words of a multi-word fact within a short window, in any order."""
    wanted = set(content_words(needle))
    # a fact with a number is stated only with that number: "-7 °C" is not "-1 °C"
    if len(wanted) < 2 or any(not word.isalpha() for word in needle if word in wanted or word[0].isdigit()):
        return None
    window = 2 * len(needle) + 2
    for start in range(len(haystack)):
        span = haystack[start : start + window]
        if span and span[0] in wanted and wanted <= set(span):
            end = start + max(i for i, word in enumerate(span) if word in wanted) + 1
            return FactMatch(alternative, start, end)
    return None


def _find_denied(alternative: str, needle: list[str], haystack: list[str]) -> FactMatch | None:
    """ "no viruses" as any clause that denies something of viruses ("viruses are NOT filtered out")."""
    if needle[0] not in _DENYING or len(needle) > 3:
        return None
    wanted = set(content_words(needle[1:])) - _DENYING
    if not wanted or any(not word.isalpha() for word in wanted):
        return None
    start = 0
    for end in [*[i for i, word in enumerate(haystack) if word == BOUNDARY], len(haystack)]:
        clause = haystack[start:end]
        if wanted <= set(clause) and _DENYING & set(clause):
            # the match starts at the denial too: "none included" states "not included", negates nothing
            first = start + min(clause.index(word) for word in wanted | (_DENYING & set(clause)))
            return FactMatch(alternative, first, first + 1)
        start = end + 1
    return None


@lru_cache(maxsize=8192)
def _tokenise(text: str) -> Tokenised:
    words = match_tokens(text)
    return Tokenised(words, quantities_in(words))
