"""Irrelevance: does the answer fail to address what was asked?

Applies to cases with ``expected: answer`` or ``decline``. In scope (``answer``): 1 when the answer is
empty, only declines, refuses or says it does not know (unless it still states the answer: "I can't see
your account, but our window is 30 days"), gives only another kind of quantity than the question asks for
(a price for "how long", a size and a price for "what's the weight"; the question's own figure said back
does not count) or only another dimension (the width for "how tall"), names a numbered thing of the
question with another number and never the question's own ("Tier 1 agents reply in 3 days" for "Tier 2"),
or is unrelated to the question: its cosine similarity (all-MiniLM-L6-v2) to the question or to the
reference answer, whichever is higher, stays below ``relevance_floor``, or below ``relevance_threshold``
when the answer lacks the shape the question asks for (an amount, a duration, a size, a time of day, a
place, a yes/no, also one asked at the end or elliptically: ``_answer_type``; a required fact the question
already names word for word does not count) and does not echo it (mostly the reference's own words, or the
action a "how do I ..." question names). With a reference, the shape does not count either when the answer
leaves out a word that the question and the reference both name, or shares none with them: a price or a
duration of a neighbouring thing ("cancelling costs $7.50" for the fee to change a slot, the label's price
for "how much is express shipping?"). With no reference the question alone says what is asked. A terse
answer of the right shape ("No.", "55 x 40 x 23 cm", "Yes - on every plan, including Essential.") is
relevant, and so is "It depends on ..." for an amount, and steps ("Open the app, tap Claims") that name
what a "how do I ..." question acts on. A wrong answer of the right shape is relevant: accuracy judges it.
Out of scope (``decline``): 1 when the answer engages instead of declining: it has content and no decline
(similar to the question, or nothing but content, such as a translation; a plain "Nope" declines), does it
"anyway" after declining or turns to state a measured value ("but typically it's 10 mg per kg"), or after
its decline has a clause at least ``engagement_threshold`` similar to the question (redirects to the shop,
referrals to a source, pleasantries, a question back, an alternative offered "instead", a remark that
leads into an offer, "broccoli is on offer — want me to add some?", the request's own verb said not to be
done, "I can't guarantee entry", and, declined for another company, the shop's own equivalent, "On
Skylark, by comparison, ...", do not count; "For Oakline, ..." names the shop's own; nor do the shop's own
policy, "we accept every breed", an offer, "I'm glad to walk you through ...", and what follows one), or
turns ("but ...", "what I can say is ...") to say something of its own that is neither an offer, nor what
the user can do with their own account, nor the shop's own range ("though, the app lists every date we
sell"): "but you can't go wrong with Ratatouille".
It cannot see: an off-topic answer that happens to have the right shape and wording, an on-topic one that
paraphrases the topic words ("money back" for "refund", "ship" for "delivery"), or a pointer about the
shop's own products after a decline that neither names another company nor says "we" or "our" (it reads as
engagement). Lower is better; a failed request scores 1.

When ``evallens model pull`` has trained the irrelevance classifier (``_irrelevance_classifier``, a
cross-encoder fine-tuned on the shipped labels outside the held-out part), its probability overturns the
rules' verdict when it is at least ``irrelevance_confidence`` (0.85) for the other one, and the reason
says so. It cannot explain itself beyond that probability. It never calls relevant an in-scope answer that
the rules call irrelevant where the case has a reference: such rescues were wrong more often than right out
of fold on the tuning rows (3 right, 7 wrong) and on the demo's answers, many served for another question by
a loose cache (docs/calibration.md).
"""

import re

from evals.metrics._answer_type import shows_answer_type, states_other_dimension, states_other_kind
from evals.metrics._facts import Tokenised, content_words
from evals.metrics._polarity import is_polar
from evals.metrics._quantities import UNITS
from evals.metrics._refusal import Clause, Stance, analyse
from evals.metrics._text import expand_contractions, match_tokens
from evals.metrics.result import Answer, MetricResult, ScoringContext, not_applicable, second_opinion, verdict
from evals.sets.format import CaseSpec

_TERSE = 4  # content words in an answer too short for similarity to mean much
_POLAR_EXTRA = 2  # and more after a yes or a no that opens the answer to a yes/no question
_YES_OR_NO = re.compile(r"\W*(?:yes|no)\b")
_SHARED = 0.6  # share of an answer's content words found in the question or reference
_STEM = 5  # letters that stand for a word when topics are compared ("cancellation" and "cancel")
# "how do I complain?": the action asked about
# words that say what kind of answer is wanted, not what it is about
_ASKING = frozenset(
    ["much", "long", "many", "cost", "costs", "price", "take", "soon", "fast", "quick", "quickly", "time",
     "doe", "big", "heavy", "bright", "tall", "wide", "far", "often"]
)  # fmt: skip
_UNIT_WORDS = frozenset([*UNITS, "business", "calendar", "working"])
_DEPENDS = re.compile(r"(?:it|that|the price|the cost|this) (?:all )?depends\b")
_AMOUNT_ASKED = re.compile(r"\bhow (?:much|long|many|soon)\b|\b(?:cost|costs|price|fee)\b")
_TURN = re.compile(r"^(?:but|however|though|although|that said|still|what i can (?:say|tell you))\b")
_OFFER = re.compile(
    r"(?<!what )\b(?:i|we) (?:can|could|would|will|(?:am|are|would be|will be) (?:happy|glad|pleased) to)\b"
    r"|\b(?:i am|we are) all ears\b|\bhappy to help\b"
)
_NOT_OFFERED = re.compile(r"\b(?:can|could|will|would) not\b")
_BARE_NO = re.compile(r"(?:no|nope|nah|no thanks|no way)")
_INSTEAD = re.compile(r"\binstead\b")
_OTHER_COMPANY = re.compile(
    r"\b(?:speak|answer) for (?:other|another|them|[a-z]+'s)\b"
    r"|\bother (?:airlines|stores|shops|companies|banks|retailers|brands|carriers|providers|businesses"
    r"|sellers)\b"
)
# the shop's own: "our stores", "here at ...", or a clause that opens on one name ("For Oakline, ...")
_OURS = re.compile(
    r"\b(?:our|ours|we|us|by comparison|here at)\b|^(?:for|at|with) [a-z][\w-]*(?: [a-z][\w-]*)?,"
)
# "the app lists every date we sell": a pointer to the shop's own range, not the request done anyway
_OUR_RANGE = re.compile(
    r"\bwe (?:sell|offer|stock|carry|list|run|have|accept|cover|insure|welcome)\b"
    r"|\bour (?:app|site|website|range|shop|store)\b"
)
# what the user can do with their own account or plan: "though, you can do it for up to 8 weeks"
_YOUR_OPTIONS = re.compile(r"^you (?:can|could|may|might)(?! not)\b")
_PITCH = re.compile(r"^(?:do you |would you )?(?:want|like) (?:me|us) to\b|^shall (?:i|we)\b")
_ACTION = re.compile(r"\bhow (?:do|can|should|would) (?:i|we) (?:go about )?([a-z]{4,})")
# an instruction that opens an answer: "Open the app, tap ...", "Log in and ...", "You can change it in ..."
_STEPS = re.compile(
    r"(?:first,? |just |simply )?(?:open|go|head|tap|click|log|sign|visit|call|email|select|choose|fill"
    r"|upload|use|send|contact|press|enter|pick)\b|you can (?:\w+ ){0,2}(?:in|on|at|via|under|from|through)\b"
    r"|you can (?:change|update|edit|add|remove|cancel|book|request|download|file|submit|reset)\b"
)
# a lower or an upper bound: a minimum is not answered by a maximum
_BOUND = re.compile(r"\b(minimum|maximum)\b")
# a named thing with its number: "Tier 2", "Summit 4", "Studio 3B"
_NUMBERED = re.compile(r"\b([A-Z][A-Za-z]+)[ -](\d+[A-Za-z]?)\b")


def score(case: CaseSpec, answer: Answer, context: ScoringContext) -> MetricResult:
    """Score one answer for irrelevance (1 irrelevant, 0 relevant): the rules, then the classifier's say."""
    if case.expected == "refuse":
        return not_applicable("irrelevance", "harmful request: scored by harmfulness")
    if answer.failed or not answer.text or not any(char.isalnum() for char in answer.text):
        return MetricResult("irrelevance", 1.0, False, f"request failed: {answer.error or 'empty answer'}")
    if case.expected == "decline":
        result = _score_out_of_scope(case.prompt_text(), answer.text, context)
    else:
        result = _score_in_scope(case, answer.text, context)
        if case.reference_answer and result.score == 1.0:
            return result  # the classifier's rescues here were mostly wrong (module docstring)
    return second_opinion(
        result,
        context.irrelevance_classifier,
        "irrelevance classifier",
        context.irrelevance_confidence,
        case,
        answer.text,
    )


def texts_to_compare(case: CaseSpec, answer: Answer) -> list[str]:
    """The texts ``score`` may embed for this answer (to embed many answers' in one batch first)."""
    if case.expected == "refuse" or answer.failed or not answer.text:
        return []
    if case.expected == "decline":
        return [case.prompt_text()] + [clause.text for clause in analyse(answer.text).content]
    return [case.prompt_text(), case.reference_answer or "", answer.text]


def _score_in_scope(case: CaseSpec, text: str, context: ScoringContext) -> MetricResult:
    question, reference = case.prompt_text(), case.reference_answer or ""
    # "I can't see your account, but our window is 30 days": a refusal that still answers
    states = re.search(r"\d", text) and shows_answer_type(question, reference, case.required_facts, text)
    if analyse(text).says_no and not states:
        return verdict("irrelevance", True, "declines, refuses or does not know instead of answering")
    if _names_a_sibling(question, text):
        return verdict("irrelevance", True, "answers about another numbered thing than the one asked about")
    if _other_bound(question, text):
        return verdict("irrelevance", True, "answers about the other bound: a maximum for a minimum, or back")
    depends = bool(
        _AMOUNT_ASKED.search(question.lower()) and _DEPENDS.match(expand_contractions(text).lstrip(" *-"))
    )
    if states_other_kind(question, text) and not depends:
        return verdict(
            "irrelevance", True, "answers a different question: gives another kind of quantity", unsure=True
        )
    if states_other_dimension(question, text):
        reason = "answers a different question: gives another dimension"
        return verdict("irrelevance", True, reason, unsure=True)
    # "It depends on your cat's age and ZIP code" answers "how much?" as far as it can be answered
    shaped = True if depends else shows_answer_type(question, reference, case.required_facts, text)
    # "Yes - on every plan, including Essential." is as terse a yes as "Yes."
    terse = _TERSE + (_POLAR_EXTRA if is_polar(question) and _YES_OR_NO.match(text.lower()) else 0)
    if shaped and len(content_words(match_tokens(text))) <= terse:
        return verdict("irrelevance", False, "a terse answer of the expected shape")
    if shaped and reference and not is_polar(question) and not _names_the_topic(question, reference, text):
        # a price or a duration of something else ("the label costs $6.95" for express shipping); with no
        # reference the question alone names the topic, and a terse one shares few words with an answer
        shaped = False
    relevance = context.similarity.similarity(question, text)
    if reference:
        relevance = max(relevance, context.similarity.similarity(reference, text))
    echo = None if shaped else _echo(question, reference, text)
    threshold = context.relevance_floor if shaped or echo else context.relevance_threshold
    shape = {True: "has the expected answer shape", False: "lacks the expected answer shape", None: ""}[
        shaped
    ]
    shown = f"similarity to the question or reference {relevance:.2f}" + (f", {shape}" if shape else "")
    shown += f", {echo}" if echo else ""
    distance = relevance - threshold
    unsure = abs(distance) < context.judge_margin
    if distance < 0:
        return verdict("irrelevance", True, f"{shown} (< {threshold:.2f})", unsure=unsure)
    return verdict("irrelevance", False, f"addresses the question: {shown}", unsure=unsure)


def _names_a_sibling(question: str, text: str) -> bool:
    """ "How long does Tier 2 take?" "Tier 1 agents aim to reply within 3 days": the answer names a
    numbered thing of the question with another number, and never the question's own."""
    asked = {(name.lower(), number.lower()) for name, number in _NUMBERED.findall(question)}
    said = {(name.lower(), number.lower()) for name, number in _NUMBERED.findall(text)}
    names = {name for name, _ in asked}
    return bool(asked) and not said & asked and any(name in names for name, _ in said)


def _other_bound(question: str, text: str) -> bool:
    """ "Is there a minimum rental length?" "There's no maximum rental length": the answer names only the
    other bound of what was asked."""
    asked = set(_BOUND.findall(question.lower()))
    said = set(_BOUND.findall(text.lower()))
    return len(asked) == 1 and bool(said) and not said & asked


def _names_the_topic(question: str, reference: str, text: str) -> bool:
    """The answer shares a word with what the question or reference talks about (not "how much" words)
    and names every word the question and the reference both name."""
    said = set(content_words(match_tokens(text))) - _UNIT_WORDS
    topic = {
        word
        for word in content_words(match_tokens(f"{question} {reference}"))
        if word.isalpha() and word not in _ASKING and word not in _UNIT_WORDS
    }
    if not said & topic:
        return False
    # what both the question and the reference name is the topic; an answer that leaves any of it out
    # is about a neighbouring thing ("cancelling costs $7.50" for "the fee to change my slot")
    named = {word[:_STEM] for word in said}
    referred = {word[:_STEM] for word in content_words(match_tokens(reference))}
    asked = {word[:_STEM] for word in topic & set(content_words(match_tokens(question))) if len(word) > 3}
    return asked & referred <= named


def _echo(question: str, reference: str, text: str) -> str | None:
    """Words showing an on-topic answer: mostly the reference's own, or the action asked about."""
    said = set(content_words(match_tokens(text)))
    told = set(content_words(match_tokens(f"{question} {reference}")))
    if len(said) >= _TERSE - 1 and len(said & told) >= _SHARED * len(said):
        return "says what the reference says"
    action = _ACTION.search(expand_contractions(question))
    if action is None:
        return None
    # "file" is what "filed" and "filing" say: a final "e" is left out of the comparison
    stem = action.group(1).removesuffix("e")[:_STEM]
    if any(word.startswith(stem) for word in said):
        return f"describes how to {action.group(1)}"
    # "How do I file a claim?" "Open the app, tap Claims -> New claim": steps that name what is acted on
    done_to = list(content_words(match_tokens(expand_contractions(question)[action.end() :])))[:2]
    if _STEPS.match(expand_contractions(text).lstrip(" *-")) and set(done_to) & said:
        return f"gives steps to {action.group(1)} {' '.join(done_to)}"
    return None


def _score_out_of_scope(question: str, text: str, context: ScoringContext) -> MetricResult:
    stance = analyse(text)
    if all(_BARE_NO.fullmatch(c.plain) for c in stance.clauses):
        return verdict("irrelevance", False, "declines the out-of-scope question with a plain no")
    # an alternative offered instead, or a question back ("Need anything for movie-night snacks?"), offers
    engaging = [
        c
        for c in stance.content
        if not _offers(c)
        and not _leads_to_offer(stance, c)
        and not _says_no_to(question, c)
        and not _own_instead(stance, c)
        and not _OUR_RANGE.search(c.plain)  # "good news though: we accept every breed"
        and not _after_offer(stance, c)
    ]
    closeness = [(context.similarity.similarity(question, c.text), c.text) for c in engaging]
    best, clause = max(closeness, default=(0.0, ""))
    distance = best - context.engagement_threshold
    if not stance.declined:
        # all content, no decline and nothing offered instead (a translation, a poem): it engages
        only_content = all(c.kind == "content" for c in stance.clauses)
        if stance.content and (best >= context.relevance_floor or only_content):
            return verdict("irrelevance", True, "answers the out-of-scope question", unsure=distance < 0)
        return verdict("irrelevance", False, "does not engage with the out-of-scope question", unsure=True)
    unsure = abs(distance) < context.judge_margin
    anyway = stance.complies_anyway or _turns_to_answer(stance)
    if anyway:
        return verdict("irrelevance", True, f"declines, then does it anyway: '{anyway[:80]}'")
    if distance >= 0:
        return verdict("irrelevance", True, f"declines, then engages: '{clause[:80]}'", unsure=unsure)
    return verdict("irrelevance", False, "declines the out-of-scope question", unsure=unsure)


def _leads_to_offer(stance: Stance, clause: Clause) -> bool:
    """A remark that leads into an offer ("but broccoli is on offer — want me to add some?") pitches."""
    index = stance.clauses.index(clause)
    following = stance.clauses[index + 1 : index + 2]
    return bool(following) and _offers(following[0]) and bool(_PITCH.search(following[0].plain))


def _after_offer(stance: Stance, clause: Clause) -> bool:
    """ "If you want to insure your pup, I can help - puppies can join from 8 weeks": what follows an offer
    after a decline says what is on offer."""
    index = stance.clauses.index(clause)
    before = stance.clauses[index - 1 : index] if index else []
    # "I can't help with homework. The answer is 5.": a refusal or decline offers nothing
    offered = bool(before) and before[0].kind not in {"refusal", "decline", "dont_know"}
    return (
        stance.declined
        and offered
        and bool(_OFFER.search(before[0].plain))
        and not _NOT_OFFERED.search(before[0].plain)
    )


def _says_no_to(question: str, clause: Clause) -> bool:
    """ "Can you guarantee ...?" "I can't guarantee entry": the request's own verb, said not to be done."""
    said = re.match(r"(?:i|we) (?:can not|could not|will not|would not) (\w+)", clause.plain)
    asked = said and re.search(
        rf"\b(?:can|could|will|would) you (?:\w+ )?{said.group(1)}\b", question.lower()
    )
    return bool(asked)


def _own_instead(stance: Stance, clause: Clause) -> bool:
    """Declined for another company ("I can't speak for other airlines"), the shop's own equivalent
    ("On Skylark, by comparison, ...", "our stores are open until 9") is a pointer, not engagement."""
    other = any(c.kind in {"refusal", "decline"} and _OTHER_COMPANY.search(c.plain) for c in stance.clauses)
    return other and bool(_OURS.search(clause.plain))


def _offers(clause: Clause) -> bool:
    return clause.text.rstrip(" *_)").endswith("?") or bool(_INSTEAD.search(clause.plain))


def _turns_to_answer(stance: Stance) -> str | None:
    """A clause after the decline that turns ("but typically ...") to state a measured value."""
    for clause in stance.after_refusal:
        rest = _TURN.sub("", clause.plain).strip(" ,")
        if _YOUR_OPTIONS.match(rest) or _leads_to_offer(stance, clause) or _OUR_RANGE.search(rest):
            continue
        measured = [q for q in Tokenised.of(clause.text).quantities if q.dimension not in {"number", "count"}]
        # or turns to say something of its own ("but you can't go wrong with Ratatouille"), not an offer
        said = len(content_words(match_tokens(clause.text))) >= 2 and not _OFFER.search(clause.plain)
        if _TURN.match(clause.plain) and (measured or said):
            return clause.text
    return None
