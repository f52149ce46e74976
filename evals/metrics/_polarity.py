"""Polarity: a required fact negated, or the opposite yes or no.

Two checks, each named in the reason: a required fact negated in the answer (in any of its
sentences, also after it was first stated plainly, or denied right after it is named: "sesame isn't
one of them") but not in the reference, or the other way round ("does not remove viruses" /
"removes viruses"; a fact that is itself a denial, "not included", is stated by "none included");
and a yes/no question answered with the opposite of the reference's yes or no (a "We do" counts when
it echoes the question's auxiliary; "We're closed" for "are you open?" and "It'll go dead" for "will it
still work?" say neither, they name another predicate; a condition may come before the question's
auxiliary: "If I miss it, can I get a refund?"). What the reference denies or affirms beyond the facts
is ``_denials``'s. Negation is read from words ("not", "never", "no", "nothing", "non-", "without"); one
inside an "if" clause ("if they don't accept within 3 days, ...") sets a condition and does not negate
the fact.
"""

import re
from collections.abc import Sequence

from evals.metrics._facts import FactMatch, Tokenised, alternatives, find_fact
from evals.metrics._quantities import UNITS
from evals.metrics._text import BOUNDARY, clean, expand_contractions, match_tokens
from evals.sets.format import Fact

NEGATORS = frozenset({"not", "without", "nothing", "none", "nor", "neither", "nobody"})
NEGATING = NEGATORS | {"no"}
# an answer's sentences, also cut at "but" and ";"
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|;\s*|,?\s+\bbut\b\s*")
# words after which "not"/"no" limits a value instead of denying it ("not after 30 days", "no more than")
BOUNDS = frozenset(["after", "beyond", "past", "later", "more", "longer", "over", "exceed", "exceeding",
                    "until", "only", "less", "fewer", "under", "below", "above"])  # fmt: skip
_AFFIRM = re.compile(
    r"^(?:yes|yeah|yep|yup|sure|absolutely|definitely|of course|certainly|correct|indeed|that is right)\b"
)
_DENY = re.compile(
    r"^(?:no|nope|nah|not|never|afraid not|unfortunately(?:,)? (?:no|not)|sorry,? (?:no|not))\b"
    r"(?! (?:problem|worries|need|doubt)\b)"
)
# "We do!", "You can't.": a yes or no only when it echoes the question's own auxiliary
_ECHO = re.compile(
    r"^(?:(?:yes|no),? )?(?:you|we|it|they|i|he|she) "
    r"(?:sure |certainly |definitely |absolutely |really |surely )?"
    r"(can|do|does|will|are|is|am)( not)?\b"
)
_SAME_AUX = {"can": "can", "could": "can", "do": "do", "does": "do", "did": "do", "will": "will",
             "would": "will", "is": "be", "are": "be", "am": "be", "was": "be"}  # fmt: skip
_CONDITIONAL_SENTENCE = re.compile(r"^\W*(?:if|unless|as long as|provided)\b")
_REACH = 4  # words back a negation reaches ("not within 30 days")
_LISTED_REACH = 5  # and a "no" across a list ("no utility bill or proof of address")
_CONDITION_REACH = 10  # words back an "if" reaches
# "hi, do you ...?", "Hello there - can I ...?": a greeting before the question asks nothing
_GREETING = re.compile(
    r"^\W*(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening))(?: there| team| all)?\b\W*"
)
# "If my kid doesn't show up, can I get a refund?": a condition may come before the auxiliary
_POLAR = re.compile(
    r"^\W*(?:(?:if|when|once|after|before|say|suppose)\b[^,?]{1,80},\s*)?"
    r"(?P<aux>can|could|do|does|did|is|are|was|will|would|should|may|am|have|has|must)\b"
)
_ASKED = re.compile(r"[^.!?]*\?")


def negated_at(words: Sequence[str], start: int) -> bool:
    """An odd number of negations in the few words before ``start`` within its clause."""
    count = 0
    for offset in range(1, _LISTED_REACH + 1):
        index = start - offset
        if index < 0 or words[index] in {BOUNDARY, "but", "and"}:
            break
        word = words[index]
        # "never goes above $5" bounds a value as "not above" does: one verb may come between
        following = next((w for w in words[index + 1 : index + 3] if w in BOUNDS), words[index + 1])
        # "no utility bill or proof of address": a "no" before an "or" denies what follows it too
        listed = "or" in words[index + 1 : start]
        negator = offset < _REACH and word in NEGATORS and following not in BOUNDS
        if word == "no" and (offset == 1 or listed) or negator or offset == 1 and zero_of(words, index):
            count += 1
    return count % 2 == 1


def polarity_conflicts(question: str, reference: str, facts: Sequence[Fact], answer: str) -> list[str]:
    """Reasons the answer's yes/no or negations disagree with the reference (empty: none found)."""
    reasons = _negated_facts(reference, facts, answer)
    reasons += _opposite_yes_no(question, reference, answer)
    return reasons


def is_polar(question: str) -> bool:
    """A yes/no question: it opens with an auxiliary, or one of its questions does ("Is it covered?")."""
    plain = without_greeting(expand_contractions(question))
    return bool(_POLAR.match(plain)) or any(_POLAR.match(asked.strip()) for asked in _ASKED.findall(plain))


def opening_polarity(text: str, question: str = "") -> int:
    """1 when ``text`` opens with a yes, -1 with a no, 0 with neither.

    A pronoun and auxiliary ("We do.", "You can't") count only when they echo the question's.
    """
    opening = expand_contractions(text).lstrip(" *-\"'")
    if _DENY.match(opening):
        return -1
    if _AFFIRM.match(opening):
        return 1
    echo = _ECHO.match(opening)
    asked = _POLAR.match(_last_question(question))
    if echo and asked and _SAME_AUX.get(echo.group(1)) == _SAME_AUX.get(asked.group("aux")):
        # "Are you open?" "We're closed.": a "be" echo says yes or no only of the predicate asked about
        said = re.match(r" ([a-z-]+)", opening[echo.end() :])
        asked_words = re.findall(r"[a-z-]+", asked.string)
        # "It'll go dead" echoes "will", but says nothing of whether it will still work
        another_predicate = said is not None and said.group(1) not in asked_words
        if another_predicate and (_SAME_AUX[echo.group(1)] == "be" or not echo.group(2)):
            return 0
        return -1 if echo.group(2) else 1
    return 0


def without_greeting(question: str) -> str:
    """The question without a greeting before it ("hi do you do student discounts?")."""
    return _GREETING.sub("", question, count=1)


def _last_question(question: str) -> str:
    plain = without_greeting(expand_contractions(question))
    asked = [a.strip() for a in _ASKED.findall(plain)]
    return next((a for a in reversed(asked) if _POLAR.match(a)), plain)


def _negated_facts(reference: str, facts: Sequence[Fact], answer: str) -> list[str]:
    reference_tokens, answer_tokens = Tokenised.of(reference), Tokenised.of(answer)
    reasons = []
    for fact in facts:
        match = find_fact(fact, answer_tokens)
        if match is None:
            continue
        known = find_fact(fact, reference_tokens)
        denied_there = known is not None and _negated(reference_tokens.words, known)
        negated = _all_negated(fact, answer_tokens) or _negated_later(fact, answer)
        if negated and not denied_there:
            reasons.append(f"negates '{match.fact}'")
        elif denied_there and not any(_denies(s) for s in _sentences_with(answer, match.fact)):
            reasons.append(f"affirms '{match.fact}', which the reference denies")
    return reasons


def _opposite_yes_no(question: str, reference: str, answer: str) -> list[str]:
    if not reference or not is_polar(question):
        return []
    expected, given = opening_polarity(reference, question), opening_polarity(answer, question)
    if expected and given and expected != given:
        said, wanted = ("yes", "no") if given > 0 else ("no", "yes")
        return [f"answers {said} where the reference answers {wanted}"]
    return []


def zero_of(words: Sequence[str], index: int) -> bool:
    """ "Zero serious faults" (normalised "0 serious fault") denies as "no serious faults" does; "0 gbp"
    and "0 percent" are values."""
    after = words[index + 1] if index + 1 < len(words) else ""
    return words[index] == "0" and after.isalpha() and after not in UNITS


def _denies(sentence: str) -> bool:
    words = match_tokens(sentence)
    return bool(set(words) & NEGATING) or any(zero_of(words, index) for index in range(len(words)))


def _negated(words: Sequence[str], match: FactMatch) -> bool:
    """Negated before ("not 30 days"), or a fact in words denied right after it ("sesame isn't one")."""
    following = words[match.end] if match.end < len(words) else ""
    said = match_tokens(match.fact)
    plain = all(word.isalpha() for word in said) and not NEGATING & set(said)  # not "no viruses"
    if negated_at(words, match.start) and not _in_condition(words, match.start):
        return True
    return plain and following == "not"


def _all_negated(fact: Fact, tokens: Tokenised) -> bool:
    """Every wording of the fact the text holds is negated: "counts as used, so the credit won't come
    back" states "counts as used" plainly even where "credit ... is used" reads as denied."""
    found = [find_fact(wording, tokens) for wording in alternatives(fact)]
    matches = [match for match in found if match is not None]
    return bool(matches) and all(_negated(tokens.words, match) for match in matches)


def _in_condition(words: Sequence[str], start: int) -> bool:
    """The fact sits in an "if" clause ("if they don't accept within 3 days, ..."): a negation there sets a
    condition, it does not deny the fact."""
    for index in range(start - 1, max(-1, start - _CONDITION_REACH), -1):
        if words[index] in {BOUNDARY, "but"}:
            return False
        if words[index] == "if":
            return True
    return False


def _negated_later(fact: Fact, answer: str) -> bool:
    """A sentence of the answer denies the fact it states elsewhere ("3 years. ... it isn't 3 years")."""
    # "If you top up your wallet, there's no hold at all" denies it only on a condition
    texts = SENTENCE.split(clean(answer))
    sentences = [Tokenised.of(text) for text in texts]
    for index, tokens in enumerate(sentences):
        if _CONDITIONAL_SENTENCE.match(expand_contractions(texts[index])) or not _all_negated(fact, tokens):
            continue
        # "mandatory for all travellers ... cancellation cover is not required": another wording stated
        # plainly elsewhere is not the one denied here
        denied = _wordings(fact, tokens)
        if all(_wordings(fact, other) <= denied for other in sentences[:index] + sentences[index + 1 :]):
            return True
    return False


def _wordings(fact: Fact, tokens: Tokenised) -> set[str]:
    """The fact's wordings that ``tokens`` hold."""
    return {wording for wording in alternatives(fact) if find_fact(wording, tokens) is not None}


def _sentences_with(answer: str, fact: str) -> list[str]:
    wanted = [w for w in match_tokens(fact) if w != BOUNDARY]
    found = []
    for sentence in SENTENCE.split(clean(answer)):
        words = match_tokens(sentence)
        if any(words[i : i + len(wanted)] == wanted for i in range(len(words))):
            found.append(sentence)
    return found or [answer]
