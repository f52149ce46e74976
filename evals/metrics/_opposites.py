"""Opposite outcomes: a thing the reference gives one outcome said to get the opposite one.

"the deposit is forfeited" / "your deposit is refunded": one thing, named by a content word within a few
words before the outcome in both clauses, with outcomes from the two sides of a pair (kept by the company
or given back; accepted or refused; optional or required; allowed or banned). A clause that negates
anything or sets a condition ("if", "unless", "when") is not read, in either text.
What it cannot see: the thing named two ways ("deposit" and "down payment"), or an outcome worded outside
the pairs ("you lose it" is read, "it goes to the charity fund" is not).
"""

from collections.abc import Sequence

from evals.metrics._facts import STOPWORDS
from evals.metrics._polarity import NEGATING
from evals.metrics._text import BOUNDARY, match_tokens, stem

_SIDES = [
    (
        ["forfeit", "forfeited", "lost", "lose", "retain", "retained"],
        ["refund", "refunded", "returned", "reimbursed", "repaid"],
    ),
    (["accepted"], ["declined", "rejected", "refused"]),
    (["optional"], ["mandatory", "compulsory", "required"]),
    (["allowed", "permitted"], ["banned", "prohibited", "forbidden"]),
]
_PAIRS = [
    (frozenset(stem(word) for word in one), frozenset(stem(word) for word in other)) for one, other in _SIDES
]
_CONDITIONS = frozenset(["if", "unless", "when", "whenever", "once", "until", "only"])
_REACH = 4  # words before the outcome that may name the thing


def opposite_outcomes(reference: str, answer: str) -> list[str]:
    """Reasons the answer gives a thing the opposite of the outcome the reference gives it."""
    theirs = _outcomes(match_tokens(reference))
    for thing, side, word in _outcomes(match_tokens(answer)):
        for known, other, said in theirs:
            if known == thing and other == -side:
                return [f"gives the {thing} the opposite outcome ('{word}') of the reference's ('{said}')"]
    return []


def _outcomes(words: Sequence[str]) -> list[tuple[str, int, str]]:
    """(thing, side, outcome word) for each plain clause: side 1 or -1 of pair number ``index + 1``."""
    found = []
    for clause in _clauses(words):
        if NEGATING & set(clause) or _CONDITIONS & set(clause):
            continue
        for position, word in enumerate(clause):
            for index, (one, other) in enumerate(_PAIRS, start=1):
                side = index if word in one else -index if word in other else 0
                if not side:
                    continue
                for thing in clause[max(0, position - _REACH) : position]:
                    if thing.isalpha() and len(thing) > 2 and thing not in STOPWORDS:
                        found.append((thing, side, word))
    return found


def _clauses(words: Sequence[str]) -> list[list[str]]:
    clauses: list[list[str]] = [[]]
    for word in words:
        if word in {BOUNDARY, "but", "however", "although", "while", "and", "or"}:
            clauses.append([])
        else:
            clauses[-1].append(word)
    return [clause for clause in clauses if clause]
