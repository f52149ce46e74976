"""Claims in an answer that contradict the reference answer or the required facts.

Three kinds, each named in the reason: a quantity that conflicts with the reference's value for the
same thing (same dimension and scale, and either said about the same words or the only value of
its kind the answer gives); a required fact the answer negates ("not free", "no longer 30 days");
and an unqualified universal claim ("always", "lifetime", "no matter what") the reference does not
make. What it cannot see: wrong claims with no number, negation or universal word in them.
"""

import re
from collections.abc import Sequence

from evals.metrics._facts import STOPWORDS, Tokenised, alternatives, find_fact
from evals.metrics._quantities import Quantity
from evals.metrics._text import BOUNDARY, clean, match_tokens
from evals.sets.format import Fact

_CONTEXT = 5  # words either side of a quantity that say what it is about
_MAX_SCALE = 30.0  # quantities further apart than this are about different things
_NEGATORS = {"not", "without"}
_BOUNDS = {
    "after",
    "beyond",
    "past",
    "later",
    "more",
    "longer",
    "over",
    "exceed",
    "exceeding",
    "until",
    "only",
}
_CONDITIONS = {"if", "unless", "once", "whenever", "case"}
_EVENTS = {
    **dict.fromkeys(
        ["delivery", "delivered", "arrival", "arrive", "arrives", "receipt", "received"], "delivery"
    ),
    **dict.fromkeys(
        ["order", "ordered", "ordering", "purchase", "purchased", "bought", "placed", "checkout"], "order"
    ),
    **dict.fromkeys(["dispatch", "dispatched", "ship", "ships", "shipped"], "dispatch"),
}
_UNIVERSAL = re.compile(
    r"\b(always|every ?time|every day|everything|lifetime|forever|unlimited|instant(?:ly)?|no matter"
    r"|regardless|guaranteed|any ?time|24/7|no questions asked|without exception|whatever you)\b"
)


def contradictions(reference: str, facts: Sequence[Fact], answer: str) -> list[str]:
    """Reasons the answer contradicts the reference or the facts (empty: none found)."""
    answer_tokens = Tokenised.of(answer)
    reasons = _quantity_conflicts(reference, facts, answer_tokens)
    reasons += _negated_facts(reference, facts, answer_tokens)
    reasons += _universal_claims(reference, answer)
    return reasons


def _quantity_conflicts(reference: str, facts: Sequence[Fact], answer: Tokenised) -> list[str]:
    sources = [Tokenised.of(reference)] + [Tokenised.of(a) for fact in facts for a in alternatives(fact)]
    known = [(q, source) for source in sources for q in source.quantities if q.dimension != "number"]
    reasons = []
    for stated in answer.quantities:
        if stated.dimension == "number" or _negated_at(answer.words, stated.position):
            continue
        if _conditional_at(answer.words, stated.position):
            continue
        rivals = [
            (q, source)
            for q, source in known
            if q.dimension == stated.dimension
            and (q.dimension != "count" or q.unit == stated.unit)
            and stated.scale_ratio(q) <= _MAX_SCALE
        ]
        if not rivals:
            continue
        agreed_with = [(q, source) for q, source in rivals if _agrees(stated, q)]
        if agreed_with:
            reasons += _anchor_conflicts(stated, answer.words, agreed_with)
            continue
        agreeing = [other for other in answer.quantities if any(_agrees(other, q) for q, _ in rivals)]
        about_same = any(_shared_context(answer.words, stated, source.words, q) for q, source in rivals)
        # the answer gives the right value and another one for the same thing ("5 years ... no, 3 years")
        about_same |= any(_shared_context(answer.words, stated, answer.words, other) for other in agreeing)
        if about_same or not agreeing:
            expected = rivals[0][0]
            reasons.append(f"says {_show(stated)} where the reference says {_show(expected)}")
    return reasons


def _anchor_conflicts(
    stated: Quantity, words: list[str], known: list[tuple[Quantity, Tokenised]]
) -> list[str]:
    """The right duration counted from another event ("30 days from the order date" vs "of delivery")."""
    if stated.dimension not in {"time", "calendar"}:
        return []
    mine = _anchors(words, stated.position)
    theirs = set().union(*(_anchors(source.words, q.position) for q, source in known))
    if mine and theirs and not mine & theirs:
        counted, reference = sorted(mine)[0], sorted(theirs)[0]
        return [f"counts {_show(stated)} from the {counted} where the reference counts from the {reference}"]
    return []


def _anchors(words: list[str], position: int) -> set[str]:
    """The events a duration is counted from, in the few words after it (negated ones left out)."""
    found = set()
    window = words[position + 1 : position + 9]
    for index, word in enumerate(window):
        if word == BOUNDARY:
            break
        event = _EVENTS.get(word)
        if event and not {"not", "no"} & set(window[max(0, index - 3) : index]):
            found.add(event)
    # "after your order ships": the order is the subject, the event is its shipping or arrival
    return found - {"order"} if len(found) > 1 else found


def _agrees(stated: Quantity, known: Quantity) -> bool:
    """Same value, or a single value inside the known range ("up to 7 days" of "5-7 days")."""
    if stated.same_value(known):
        return True
    low, high = known.base()
    value_low, value_high = stated.base()
    return value_low == value_high and low <= value_low <= high


def _shared_context(words: list[str], stated: Quantity, other_words: list[str], other: Quantity) -> bool:
    return bool(_context(words, stated.position) & _context(other_words, other.position))


def _context(words: list[str], position: int) -> set[str]:
    window = words[max(0, position - _CONTEXT) : position] + words[position + 2 : position + 2 + _CONTEXT]
    return {w for w in window if w != BOUNDARY and w not in STOPWORDS and w.isalpha() and len(w) > 2}


def _show(quantity: Quantity) -> str:
    value = f"{quantity.low:g}" + (f"-{quantity.high:g}" if quantity.high != quantity.low else "")
    return f"{value} {quantity.unit}".strip()


def _negated_facts(reference: str, facts: Sequence[Fact], answer: Tokenised) -> list[str]:
    reference_tokens = Tokenised.of(reference)
    reasons = []
    for fact in facts:
        match = find_fact(fact, answer)
        if match is None or not _negated_at(answer.words, match.start):
            continue
        in_reference = find_fact(fact, reference_tokens)
        if in_reference is not None and _negated_at(reference_tokens.words, in_reference.start):
            continue
        reasons.append(f"negates '{match.fact}'")
    return reasons


def _negated_at(words: list[str], start: int) -> bool:
    """An odd number of negations in the few words before ``start`` within its clause."""
    count = 0
    for offset in range(1, 4):
        index = start - offset
        if index < 0 or words[index] in {BOUNDARY, "but", "and"}:
            break
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else ""
        if word == "no" and offset == 1 or word in _NEGATORS and following not in _BOUNDS:
            count += 1
    return count % 2 == 1


def _conditional_at(words: list[str], start: int) -> bool:
    """A threshold or a condition ("if it takes longer than 10 days"), not a claim about the value."""
    clause = []
    for index in range(start - 1, max(-1, start - 12), -1):
        if words[index] == BOUNDARY:
            break
        clause.append(words[index])
    return "than" in clause[:2] or bool(_CONDITIONS & set(clause))


def _universal_claims(reference: str, answer: str) -> list[str]:
    reference_words = set(match_tokens(reference))
    reasons = []
    for found in _UNIVERSAL.finditer(clean(answer).lower()):
        claim = found.group(1)
        if not set(match_tokens(claim)) <= reference_words:
            reasons.append(f"claims '{claim}', which the reference does not say")
    return reasons
