"""Exclusive scope: what a rule is limited to ("only the sender", "the Pro plan only") against what the
other text names together ("the sender or the recipient", "companies or sole traders", "any plan").

Read from the words around "only" and around "and" / "or", with no list of parties, plans or perils:
- the reference limits something to X ("Only the sender can make a claim", "on the Pro plan only") and
  the answer names X in a pair with something else ("either the sender or the recipient", "on Growth
  and Pro") or says "any" / "all" / "every" of X's noun ("on any plan");
- the answer limits something to X ("only limited companies qualify", "that's for loss only", "only on
  the Pro plan") where the reference names X in a pair with something else ("companies or sole
  traders", "loss or damage") or says "any" / "all" / "every" of X's noun ("on any plan").
A pair of modifiers shares the noun after it ("a credit or debit card", "PayPal and gift cards"), so
"card only" limits neither. And an "only" in the answer narrows what the reference leaves open in time
("open every day" / "Monday to Friday only"; "settle early at any time" / "only once you've made six
payments") when the answer names something of that sentence and does not say it again ("read-only"
limits nothing).
An "only" before a number ("only £5", "only 2 days") weighs an amount and limits nothing; one before a
condition ("only if", "only while") is left to the condition rules (``_contradiction``); "not only" and
"if only" limit nothing.

What it cannot see: a limit worded without "only" ("is a Pro feature", "reserved for the sender", "just
companies"), a verb's object after "only" ("only apply to DVDs" limits "apply"), a pair written as a
list of three or more with commas or one whose member starts with a number ("or a second cardholder"),
a limit broken without a pair ("the recipient can claim" for "only the sender can"), and a pair whose
two words are not the same kind of thing ("free and quick" beside "only quick").
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evals.metrics._facts import STOPWORDS
from evals.metrics._polarity import SENTENCE
from evals.metrics._text import BOUNDARY, clean, expand_contractions, match_tokens

_SCOPE_WORDS = 2  # content words that say what "only" limits ("only limited companies", "Pro plan only")
# words "only" may pass over before what it limits ("only on the Pro plan", "only for your own orders")
_PASSED = frozenset(["the", "a", "an", "on", "for", "to", "with", "in", "by", "at", "your", "our", "their"])
_CONDITIONS = frozenset(["if", "when", "while", "whilst", "once", "until", "till", "after", "before", "as",
                         "during", "where", "because", "since", "unless"])  # fmt: skip
_NOT_LIMITING = frozenset(["not", "if"])  # "not only", "if only"
_PAIRS = frozenset(["and", "or", "nor"])
_EVERY = frozenset(["any", "all", "every", "each"])


@dataclass(frozen=True)
class _Pair:
    """Two things a text names together ("companies or sole traders": {company}, {sole, trader})."""

    left: frozenset[str]
    right: frozenset[str]


def exclusivity_conflicts(reference: str, answer: str) -> list[str]:
    """Reasons the answer widens what the reference limits, or limits what the reference widens."""
    reference_words, answer_words = match_tokens(reference), match_tokens(answer)
    reasons = []
    limits = _limits(reference_words)
    for limit in limits:
        reasons += [
            f"names '{crossing}' where the reference limits it to '{_shown(limit)}'"
            for crossing in _crossings(limit, answer_words)
        ]
    for limit in _limits(answer_words):
        if any(limit <= known for known in limits):
            continue  # the answer says the reference's own limit again
        reasons += [
            f"limits it to '{_shown(limit)}' where the reference also names '{crossing}'"
            for crossing in _crossings(limit, reference_words)
        ]
    reasons += _narrowed_universals(reference, answer)
    reasons += _narrowed_kinds(reference, answer)
    return list(dict.fromkeys(reasons))


def _narrowed_kinds(reference: str, answer: str) -> list[str]:
    """An "only" that limits to some of a kind what the reference says of every one of it: "only on paid
    plans" for "free on every plan" (the same noun after the "only", and no "every", "any" or "all" in
    the answer's clause)."""
    every = _every(match_tokens(reference))
    for clause in SENTENCE.split(clean(answer)):
        words = match_tokens(clause)
        at = next((i for i, word in enumerate(words) if word == "only"), None)
        if at is None or not _says_only(words) or _EVERY & set(words):
            continue
        named = every & set(words[at + 1 : at + 5])
        if named:
            return [f"limits with 'only' what the reference says of every {sorted(named)[0]}"]
    return []


def _crossings(limit: frozenset[str], words: Sequence[str]) -> list[str]:
    """What ``words`` name beyond ``limit``: the other member of a pair one of whose members is within
    it ("the recipient" of "the sender or the recipient"), or "any" of its noun ("any plan")."""
    crossing = [_shown(other) for other in (_other(pair, limit) for pair in _pairs(words)) if other]
    if len(limit) > 1:  # "any plan" crosses "the Pro plan", not "plans"; "any paid plan" is "paid plans"
        crossing += [f"any {noun}" for noun in sorted(_every(words, limit) & limit)]
    return crossing


def _other(pair: _Pair, limit: frozenset[str]) -> frozenset[str]:
    """The member of ``pair`` that ``limit`` leaves out, when the other member is within it."""
    shared = pair.left & pair.right  # "credit or debit card": the modifiers differ, the noun is one
    left, right, limit = pair.left - shared, pair.right - shared, limit - shared
    if left & limit and not right & limit:
        return pair.right
    if right & limit and not left & limit:
        return pair.left
    return frozenset()


def _limits(words: Sequence[str]) -> list[frozenset[str]]:
    """What each "only" limits: the content words after it, or before it when it ends its clause."""
    limits = []
    for index, word in enumerate(words):
        if word != "only" or (index and words[index - 1] in _NOT_LIMITING):
            continue
        after = _content_after(words, index + 1, joined=True, limiting=True)
        if after is None or _conditioned(words, index + 1, after):
            continue
        ends_clause = index + 1 == len(words) or words[index + 1] == BOUNDARY
        scope = after or (_content_before(words, index, joined=True) if ends_clause else [])
        if scope:
            limits.append(frozenset(scope))
    return limits


def _content_after(
    words: Sequence[str], start: int, *, joined: bool = False, limiting: bool = False
) -> list[str] | None:
    """Content words after ``start``, past the articles and prepositions before them ("only on the Pro plan");
    ``joined``: on across "and" / "or" ("only Small and Medium parcels" limits to both); ``limiting``
    (after "only"): None when it weighs a number or opens a condition, limiting nothing."""
    first = next((i for i in range(start, len(words)) if words[i] not in _PASSED), len(words))
    if limiting and first < len(words) and (words[first][0].isdigit() or words[first] in _CONDITIONS):
        return None
    return _run(words[first:], joined)


def _conditioned(words: Sequence[str], start: int, scope: list[str]) -> bool:
    """ "only covered if you have the add-on": a single word "only" passes over on the way to a condition;
    the condition is what it limits, not the word."""
    if len(scope) != 1:
        return False
    end = words.index(scope[0], start) + 1
    return end < len(words) and words[end] in _CONDITIONS


def _content_before(words: Sequence[str], end: int, *, joined: bool = False) -> list[str]:
    """Content words right before ``end``, nearest first; ``joined``: on across "and" / "or"."""
    return _run(list(reversed(words[:end])), joined)


def _run(words: Sequence[str], joined: bool) -> list[str]:
    """The content words ``words`` open with, up to ``_SCOPE_WORDS`` per member of a pair when ``joined``."""
    found: list[str] = []
    member = 0
    for word in words:
        if joined and member and word in _PAIRS:
            member = 0
            continue
        if not _is_content(word) or member == _SCOPE_WORDS:
            break
        found.append(word)
        member += 1
    return found


def _pairs(words: Sequence[str]) -> list[_Pair]:
    """Each "X and Y" / "X or Y" with a content word on both sides ("either the sender or the recipient")."""
    pairs = []
    for index, word in enumerate(words):
        if word not in _PAIRS:
            continue
        left = _content_before(words, index)
        right = _content_after(words, index + 1)
        if left and right:
            # "credit or debit card", "PayPal and gift cards": a one-word left member shares the right's noun
            head = {right[-1]} if len(left) == 1 and len(right) > 1 else set()
            pairs.append(_Pair(frozenset(left) | head, frozenset(right)))
    return pairs


def _every(words: Sequence[str], limit: frozenset[str] = frozenset()) -> set[str]:
    """Nouns said of every kind: "any plan", "all plans", "every account"; not when the words after it hold
    all of ``limit`` ("any paid plan" for "paid plans only")."""
    return {
        words[index + 1]
        for index, word in enumerate(words[:-1])
        if word in _EVERY
        and _is_content(words[index + 1])
        and not (limit and limit <= set(words[index + 1 : index + 1 + len(limit)]))
    }


def _shown(words: frozenset[str]) -> str:
    return " ".join(sorted(words))


def _is_content(word: str) -> bool:
    return word != BOUNDARY and word.isalpha() and len(word) > 2 and word not in STOPWORDS


# what the reference leaves open in time: "open every day", "settle early at any time"
_OPEN = re.compile(r"\b(?:every day|daily|any ?time|at any point|7 days a week|24/7|always|all year)\b")


def _narrowed_universals(reference: str, answer: str) -> list[str]:
    """An "only" in the answer where the reference leaves the thing open ("every day", "at any time") and
    the answer does not say so again: "Monday to Friday only", "only once you've made six payments". The
    "only" clause must name something of the open sentence ("chat", "settle") and not mostly say again a
    sentence of the reference that limits with "only" itself; "read-only" limits nothing."""
    sentences = SENTENCE.split(clean(reference))
    # "Phone calls are only for emergencies": a limit the reference sets itself is said again, not added
    limited = [
        {w for w in match_tokens(s) if _is_content(w)} for s in sentences if _says_only(match_tokens(s))
    ]
    for sentence in sentences:
        found = _OPEN.search(expand_contractions(sentence))
        if found is None:
            continue
        named = {word for word in match_tokens(sentence) if _is_content(word)}
        for clause in SENTENCE.split(clean(answer)):
            words = match_tokens(clause)
            if _OPEN.search(" ".join(words)):
                continue  # the clause says it holds "every day" again
            # two thirds of the clause's words are the reference's own limiting sentence's
            said = {w for w in words if _is_content(w)} - {"only"}
            restated = any(3 * len(said & limit) >= 2 * len(said) for limit in limited)
            if _says_only(words) and named & set(words) and not restated:
                return [f"limits with 'only' what the reference says holds '{found.group(0)}'"]
    return []


def _says_only(words: Sequence[str]) -> bool:
    """An "only" that limits ("read-only" limits nothing)."""
    return any(
        word == "only" and not (index and words[index - 1] in _NOT_LIMITING | {"read"})
        for index, word in enumerate(words)
    )
