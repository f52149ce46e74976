"""Accuracy: is the answer to an in-scope question correct and complete?

Applies to cases with ``expected: answer``. Score 1 when the answer states every required fact (any
alternative of an any-of fact, in any common wording: ``_text.normalise``), contradicts neither the
reference nor the facts (a conflicting number, a negated fact, an unsupported universal claim:
``_contradiction``), gives no sum of money the reference, question and facts neither give nor imply by
simple arithmetic, nor one sum where they price nothing ("£12 a month, but it goes up to £15 after the
first year": ``_prices``) nor names a fee, surcharge or penalty where they name none, widens or narrows
what "only" limits ("either the sender or the recipient" for "only the sender": ``_exclusive``), does not
take a fact back (said last before a self-correction, "two years — wait, let me correct that: ...", and
not again after it), is not a refusal or "I don't know" (a decline that conveys every required fact
outside its own clauses, "I can't advise on visas; please ask the embassy", or gives a value a fact asks
for, "contact the police within a day", answers), and its cosine similarity (all-MiniLM-L6-v2) to the
reference answer or to the question, whichever is higher, reaches ``similarity_threshold`` (an answer of
six words or fewer that states every required fact, "Zero percent.", is judged by its facts: too short to
resemble anything). Verdicts within ``judge_margin`` of the threshold, that rest on a contradiction
heuristic, or that miss a fact although the answer is close to the reference and states no conflicting
value (similarity 0.6 or more: perhaps a paraphrase the matcher missed) are marked unsure for the judge.
It cannot see: a wrong claim with no number, negation, universal word or new "only if" condition that the
reference does not contradict (an exception or a charge without a fee's name: "unless you tell us before
you travel"; a condition worded with the reference's own words), or a correct fact worded so differently
that neither the matcher nor similarity finds it ("what they actually weigh" for "actual weight").
A failed request scores 0.

When ``evallens model pull`` has trained the accuracy classifier (``_accuracy_classifier``, a
cross-encoder fine-tuned on the shipped labels outside the held-out part), its probability overturns the
rules' verdict when it is at least ``accuracy_confidence`` (0.95) for the other one, and the reason says
so. It has read many wrong answers whose only fault is a claim the reference does not make; it cannot
explain itself beyond that probability, nor know the company's facts beyond the reference.
"""

import re

from evals.metrics._contradiction import contradictions
from evals.metrics._facts import FactMatch, Tokenised, alternatives, fact_label, find_fact, match_facts
from evals.metrics._prices import new_charges, new_prices
from evals.metrics._refusal import Clause, analyse
from evals.metrics._text import BOUNDARY
from evals.metrics.result import Answer, MetricResult, ScoringContext, not_applicable, second_opinion, verdict
from evals.sets.format import CaseSpec

_PARAPHRASE = 0.6
_TERSE_WORDS = 6  # an answer this short is judged by its facts, not by its similarity


def score(case: CaseSpec, answer: Answer, context: ScoringContext) -> MetricResult:
    """Score one answer for accuracy (1 accurate, 0 not): the rules, then the classifier's say."""
    if case.expected != "answer":
        return not_applicable("accuracy", f"expected behaviour is '{case.expected}'")
    if answer.failed or not answer.text or not answer.text.strip():
        return MetricResult("accuracy", 0.0, False, f"request failed: {answer.error or 'empty answer'}")
    result = _rules(case, answer.text, context)
    return second_opinion(
        result,
        context.accuracy_classifier,
        "accuracy classifier",
        context.accuracy_confidence,
        case,
        answer.text,
    )


def texts_to_compare(case: CaseSpec, answer: Answer) -> list[str]:
    """The texts ``score`` may embed for this answer (to embed many answers' in one batch first)."""
    if case.expected != "answer" or answer.failed or not answer.text:
        return []
    return [case.prompt_text(), case.reference_answer or "", answer.text]


def _rules(case: CaseSpec, text: str, context: ScoringContext) -> MetricResult:
    reference = case.reference_answer or ""
    margin = context.judge_margin
    similarity = _closeness(case.prompt_text(), reference, text, context)
    # a fact missing from an answer this close to the reference may be a paraphrase the matcher missed
    close_to_reference = similarity is not None and similarity >= max(
        _PARAPHRASE, context.similarity_threshold
    )
    found, missing = match_facts(case.required_facts, Tokenised.of(text), Tokenised.of(reference))
    missing += _retracted(case, text, found)
    conflicts = contradictions(reference, case.required_facts, text, case.prompt_text())
    standing = _standing(text)  # prices and charges count as the answer last states them
    conflicts += [
        f"gives {price}, a price the reference does not give or imply"
        for price in new_prices(case.prompt_text(), reference, case.required_facts, standing)
    ]
    conflicts += new_charges(case.prompt_text(), reference, standing) if reference else []
    if missing:
        shown = f"missing facts: {', '.join(missing)}" + (f"; {conflicts[0]}" if conflicts else "")
        return verdict("accuracy", False, shown, unsure=close_to_reference and not conflicts)
    if conflicts:
        return verdict("accuracy", False, f"contradicts the reference: {'; '.join(conflicts)}", unsure=True)
    if _says_no(case, text):
        return verdict("accuracy", False, "declines or does not know instead of answering")
    if similarity is None:
        return verdict("accuracy", True, "facts present, no reference to compare with", unsure=True)
    distance = similarity - context.similarity_threshold
    shown = f"similarity to the reference or question {similarity:.2f}"
    if distance < 0 and case.required_facts and _terse(text):
        # "Zero percent." or "5 max" has too few words to resemble anything; its facts answer
        return verdict("accuracy", True, f"a terse answer stating every required fact ({shown})", unsure=True)
    if distance < 0:
        return verdict(
            "accuracy", False, f"{shown} < {context.similarity_threshold:.2f}", unsure=distance >= -margin
        )
    return verdict("accuracy", True, f"facts present, no contradiction, {shown}", unsure=distance < margin)


def _terse(text: str) -> bool:
    return len([word for word in Tokenised.of(text).words if word != BOUNDARY]) <= _TERSE_WORDS


def _closeness(question: str, reference: str, text: str, context: ScoringContext) -> float | None:
    """How closely the answer keeps to the reference or, for short answers, to the question."""
    if not reference:
        return None
    return max(context.similarity.similarity(reference, text), context.similarity.similarity(question, text))


# "let me correct that", "scratch that": what was said right before it is taken back
_CORRECTION = re.compile(
    r"\b(?:let me correct|correction|scratch that|i mean|i meant|my mistake|my bad|on second thought)\b",
    re.IGNORECASE,
)
_LEAD_IN = re.compile(r"(?:[\s,;:.!?\u2013\u2014-]|\b(?:wait|sorry|no|actually|oh|hmm|hang on|um)\b)*$", re.I)


def _standing(text: str) -> str:
    """What the answer says after its last self-correction (all of it when there is none)."""
    corrections = list(_CORRECTION.finditer(text))
    return text[corrections[-1].end() :] if corrections else text


def _retracted(case: CaseSpec, text: str, found: list[FactMatch]) -> list[str]:
    """Facts said last before a self-correction and not again after it ("It goes down by two years —
    wait, let me correct that: it is wiped"): the answer takes them back."""
    taken_back = []
    for correction in _CORRECTION.finditer(text):
        said = Tokenised.of(_LEAD_IN.sub("", text[: correction.start()], count=1))
        after = Tokenised.of(text[correction.end() :])
        words = said.words
        while words and words[-1] == BOUNDARY:
            words = words[:-1]
        for match in found:
            fact = next(f for f in case.required_facts if match.fact in alternatives(f))
            last = find_fact(fact, said)
            if last is not None and last.end == len(words) and find_fact(fact, after) is None:
                taken_back.append(f"{fact_label(fact)} (taken back)")
    return taken_back


def _says_no(case: CaseSpec, text: str) -> bool:
    """Declines or does not know, and conveys no required fact outside the decline.

    "I can't advise on visas; please check with the embassy" answers when the facts ask for the embassy,
    and so does a decline that gives a value a fact asks for ("contact the police within a day").
    """
    stance = analyse(text)
    if not stance.says_no:
        return False
    # "you'll need to contact the police within a day" reads as a redirect; the value it gives answers
    beside = " ".join(c.text for c in stance.clauses if _answers(case, c))
    _, missing = match_facts(case.required_facts, Tokenised.of(beside))
    return not case.required_facts or bool(missing)


def _answers(case: CaseSpec, clause: Clause) -> bool:
    """Not a refusal or "I don't know", nor a decline unless it gives a value a fact asks for."""
    if clause.kind == "decline":
        found, _ = match_facts(case.required_facts, Tokenised.of(clause.text))
        return any(Tokenised.of(match.fact).quantities for match in found)
    return clause.kind not in {"refusal", "dont_know"}
