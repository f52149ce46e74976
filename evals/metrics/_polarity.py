"""Polarity: what an answer affirms that the reference denies, or denies that the reference affirms.

Three checks, each named in the reason: a required fact negated in the answer but not in the
reference, or the other way round ("does not remove viruses" / "removes viruses"); a yes/no
question answered with the opposite of the reference's yes or no; and a thing the reference denies
("no cash compensation", "loss and theft are not covered") stated in an answer sentence that
denies nothing. Negation is read from words ("not", "never", "no", "nothing", "non-", "without").
What it cannot see: a denial worded without a negation ("is excluded", "fails to").
"""

import re
from collections.abc import Sequence

from evals.metrics._facts import STOPWORDS, Tokenised, find_fact
from evals.metrics._text import BOUNDARY, clean, expand_contractions, match_tokens
from evals.sets.format import Fact

NEGATORS = frozenset({"not", "without", "nothing", "none", "nor", "neither", "nobody"})
# words after which "not"/"no" limits a value instead of denying it ("not after 30 days", "no more than")
BOUNDS = frozenset(["after", "beyond", "past", "later", "more", "longer", "over", "exceed", "exceeding",
                    "until", "only", "less", "fewer", "under", "below"])  # fmt: skip
_AFFIRM = re.compile(
    r"^(?:yes|yeah|yep|yup|sure|absolutely|definitely|of course|certainly|correct|indeed|that is right"
    r"|(?:yes,? )?(?:you|we|it|they) (?:can|do|does|will|are|is)(?! not)\b)"
)
_DENY = re.compile(
    r"^(?:no|nope|nah|not|never|afraid not|unfortunately(?:,)? (?:no|not)|sorry,? (?:no|not)"
    r"|(?:no,? )?(?:you|we|it|they) (?:can|do|does|will|are|is) not)\b(?! (?:problem|worries|need|doubt)\b)"
)
_POLAR = re.compile(r"^\W*(?:can|could|do|does|did|is|are|was|will|would|should|may|am|have|has|must)\b")
_ASKED = re.compile(r"[^.!?]*\?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|;\s*|,?\s+\bbut\b\s*")
# words that follow "no" without naming the thing denied ("no need", "no problem")
_NOT_A_THING = frozenset(["need", "problem", "worry", "way", "matter", "doubt", "longer", "more", "less",
                          "one", "later", "sooner", "idea", "thank", "thanks"])  # fmt: skip


def negated_at(words: Sequence[str], start: int) -> bool:
    """An odd number of negations in the few words before ``start`` within its clause."""
    count = 0
    for offset in range(1, 4):
        index = start - offset
        if index < 0 or words[index] in {BOUNDARY, "but", "and"}:
            break
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else ""
        if word == "no" and offset == 1 or word in NEGATORS and following not in BOUNDS:
            count += 1
    return count % 2 == 1


def polarity_conflicts(question: str, reference: str, facts: Sequence[Fact], answer: str) -> list[str]:
    """Reasons the answer's yes/no or negations disagree with the reference (empty: none found)."""
    reasons = _negated_facts(reference, facts, answer)
    reasons += _opposite_yes_no(question, reference, answer)
    reasons += _denied_claims(question, reference, answer)
    return reasons


def is_polar(question: str) -> bool:
    """A yes/no question: it opens with an auxiliary, or one of its questions does ("Is it covered?")."""
    plain = expand_contractions(question)
    return bool(_POLAR.match(plain)) or any(_POLAR.match(asked.strip()) for asked in _ASKED.findall(plain))


def opening_polarity(text: str) -> int:
    """1 when ``text`` opens with a yes, -1 with a no, 0 with neither."""
    opening = expand_contractions(text).lstrip(" *-\"'")
    if _DENY.match(opening):
        return -1
    return 1 if _AFFIRM.match(opening) else 0


def _negated_facts(reference: str, facts: Sequence[Fact], answer: str) -> list[str]:
    reference_tokens, answer_tokens = Tokenised.of(reference), Tokenised.of(answer)
    reasons = []
    for fact in facts:
        match = find_fact(fact, answer_tokens)
        if match is None:
            continue
        known = find_fact(fact, reference_tokens)
        denied_there = known is not None and negated_at(reference_tokens.words, known.start)
        if negated_at(answer_tokens.words, match.start) and not denied_there:
            reasons.append(f"negates '{match.fact}'")
        elif denied_there and not any(_denies(s) for s in _sentences_with(answer, match.fact)):
            reasons.append(f"affirms '{match.fact}', which the reference denies")
    return reasons


def _opposite_yes_no(question: str, reference: str, answer: str) -> list[str]:
    if not reference or not is_polar(question):
        return []
    expected, given = opening_polarity(reference), opening_polarity(answer)
    if expected and given and expected != given:
        said, wanted = ("yes", "no") if given > 0 else ("no", "yes")
        return [f"answers {said} where the reference answers {wanted}"]
    return []


def _denied_claims(question: str, reference: str, answer: str) -> list[str]:
    """Things the reference denies that an answer sentence without any negation states."""
    affirmed = set(match_tokens(question))
    denied: list[tuple[set[str], set[str]]] = []
    for clause in _clauses(match_tokens(reference)):
        if NEGATORS & set(clause) or "no" in clause:
            denied.append(_denied_terms(clause))
        else:
            affirmed |= set(clause)
    for sentence in _SENTENCE.split(clean(answer)):
        words = match_tokens(sentence)
        if _denies(sentence) or not words:
            continue
        for terms, strong in denied:
            terms, strong = terms - affirmed, strong - affirmed
            said = set(words) & terms
            if len(said) >= 2 or said & strong:
                return [f"states '{', '.join(sorted(said))}', which the reference denies"]
    return []


def _clauses(words: list[str]) -> list[list[str]]:
    clauses: list[list[str]] = [[]]
    for word in words:
        if word in {BOUNDARY, "but", "however", "although", "while", "except"}:
            clauses.append([])
        else:
            clauses[-1].append(word)
    return [clause for clause in clauses if clause]


def _denied_terms(clause: list[str]) -> tuple[set[str], set[str]]:
    """What a denying clause denies: its subject and the two words after the negation.

    "loss and theft are not covered" denies loss, theft and covered; the word right after "no" or
    "without" ("no cash compensation") is denied on its own (strong).
    """
    at = next(i for i, word in enumerate(clause) if word in NEGATORS or word == "no")
    after = [w for w in clause[at + 1 :] if _is_content(w)][:2]
    terms = {w for w in clause[:at] if _is_content(w)} | set(after)
    following = clause[at + 1] if at + 1 < len(clause) else ""
    strong = {following} if clause[at] in {"no", "without"} and _is_content(following) else set()
    return terms, strong - _NOT_A_THING


def _is_content(word: str) -> bool:
    return word.isalpha() and len(word) > 2 and word not in STOPWORDS and word not in NEGATORS


def _denies(sentence: str) -> bool:
    words = set(match_tokens(sentence))
    return bool(words & NEGATORS or "no" in words)


def _sentences_with(answer: str, fact: str) -> list[str]:
    wanted = [w for w in match_tokens(fact) if w != BOUNDARY]
    found = []
    for sentence in _SENTENCE.split(clean(answer)):
        words = match_tokens(sentence)
        if any(words[i : i + len(wanted)] == wanted for i in range(len(words))):
            found.append(sentence)
    return found or [answer]
