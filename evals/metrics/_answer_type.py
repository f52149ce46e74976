"""Does an answer have the shape of an answer to this question?

"How much ...?" wants an amount (or "free"; "how much data ...?" an amount of data, not a price),
"how long / when ...?" a duration or a time ("instantly", "the same day", "30 nights" too), a deadline
a duration, "what are your hours" times of day, "what size" lengths or dimensions ("55 x 40 x 23 cm"),
"where do I find ...?" a place or a path through menus, "how many ...?" a number ("how many miles" also
"25,000 miles"), a yes/no question a yes or a no (also hedged, "I think so?", conditional, "They do if
...", restricted, "Only on Flex fares", or a denial with the question's own auxiliary, "We don't offer
any" for "do you do ...?"; the question may ask it at its end, "..., is that from you?", or
elliptically, "Allowed in the cabin?", and a greeting before it, "hi, do you ...?", asks nothing); a
reference that states a quantity wants a quantity of the same kind and scale (a warranty of "2 years"
is not answered by "12 hours"). An answer that states a required fact has the right shape too. A wrong
value still has the right shape: this separates "answers a different question" from "answers this one
wrongly".
"""

import re
from collections.abc import Sequence

from evals.metrics._facts import Tokenised, alternatives, find_fact, names_fact
from evals.metrics._polarity import is_polar, opening_polarity, without_greeting
from evals.metrics._quantities import Quantity
from evals.metrics._refusal import analyse
from evals.metrics._text import expand_contractions
from evals.sets.format import Fact

_MONEY = {"usd", "eur", "gbp", "percent"}
_DURATION = {"time", "calendar", "clock"}
_MEASURE = {"mass", "volume", "energy", "power", "light", "length", "charge", "time", "temperature"}
_HOW_MUCH_MONEY = (
    r"\bhow much\b(?![^?.]{0,40}\b(?:(?<!what )time|longer|weigh\w*|hold|holds|carry|power|capacity|space"
    r"|room)\b)"
    # "how much data on Lite?", "how much alcohol can I order?": an amount of the thing named, not a price
    r"(?!\s+(?!(?:is|are|does|do|did|will|would|should|could|can|was|were|for|to|it|extra|more|of|a|an|the"
    r"|money|cash|refund|credit|deposit|discount|fees?|tax|tip|interest|postage|shipping|delivery)\b)[a-z]+"
    r"\s+(?:can|could|do|does|is|are|on|in|per|with|will|would|should|may|might|at|fits?|comes?)\b)"
)
_WANTS = [
    # the plainest cost verbs of a few other languages too: "Wie viel kostet ...?", "¿Cuánto cuesta?"
    (
        re.compile(
            rf"{_HOW_MUCH_MONEY}|\b(?:cost|price|fee|charge)s?\b|\b(?:kostet|kosten|cuestan?|co[uû]tent?)\b"
            # "what deductibles can I choose?" asks for sums
            r"|\b(?:what|which)\b[^?.]{0,30}\b(?:deductibles?|deposits?|excess)\b"
            # "what will I pay if ...?", "what do I owe?"
            r"|\bwhat (?:will|would|do|does|did|should|must) (?:i|we|you|they) (?:have to )?(?:pay|owe)\b"
        ),
        _MONEY,
    ),
    (re.compile(r"\bhow much\b[^?.]{0,40}\bweigh"), {"mass"}),
    (
        re.compile(
            r"\bhow (?:long|soon|fast|quickly)\b|\bwhen\b|\bwhat time\b|\bhow many (?:days|hours|weeks)"
        ),
        _DURATION,
    ),
    (re.compile(r"\bhow many\b"), {"count", "number"}),
    # "how old do I have to be?" asks an age ("18 or older", "21 years")
    (re.compile(r"\bhow old\b|\b(?:minimum|maximum) age\b|\bage limit\b"), {"time", "number"}),
    # "is there a minimum rental length?": a bound is answered by its value ("3 nights")
    (re.compile(r"\b(?:minimum|maximum)\b"), _MEASURE | _MONEY | {"count", "number"}),
    (
        re.compile(r"\bhow (?:bright|heavy|big|large|tall|powerful)\b|\b(?:weight|capacity|limit|runtime)\b"),
        _MEASURE,
    ),
    # "how long is the KY-310T?" asks for a length as well as a duration; "what size is it?" for lengths
    (re.compile(r"\bhow (?:long|wide|tall|high|deep|far)\b|\b(?:size|dimensions)\b"), {"length"}),
    # a deadline or a window asks for a time; "phone hours??", "what are your hours" for times of day
    (
        re.compile(
            r"\b(?:deadline|time limit|cut-?off)\b|\bhours\s*\?"
            r"|\bwhat (?:are|is) (?:the |your )?[\w -]{0,20}hours\b"
        ),
        _DURATION,
    ),
    (re.compile(r"\bwhere (?:do|can|should|would|will|is|are)\b"), {"place"}),
]
# only the unambiguous asks: "when" may ask for a condition, "how big" for an amount
_ASKS = [
    (re.compile(rf"{_HOW_MUCH_MONEY}|\bwhat (?:does|do|will) [\w -]{{1,40}} cost\b"), _MONEY),
    (
        re.compile(
            r"\bhow (?:long|soon|quickly) (?:does|do|did|will|would|until|till|before|after|to|for|can|have"
            r"|has|must|should)\b|\bwhat time\b"
        ),
        _DURATION,
    ),
    (re.compile(r"\bhow many\b"), {"count", "number"}),
    # "what's the weight of the Tab 11?" asks a mass: a screen size and a price answer something else
    (re.compile(r"\bwhat is the weight\b|\bhow heavy\b|\bhow much does [\w -]{1,40} weigh\b"), {"mass"}),
]
_POLARITY = re.compile(
    r"^(?:yes|yeah|yep|yup|no|nope|nah|sure|absolutely|definitely|of course|certainly|unfortunately|sorry"
    r"|not|never|please do not|correct|right|indeed|afraid not|that is right"
    # a hedged yes or no is still one: "I think so?", "I don't believe so"
    r"|i (?:do not )?(?:think|believe|guess|suppose) so|i (?:think|believe) not|probably(?: not)?)\b"
)
# a short answer that echoes the auxiliary: "We do!", "You can.", "It isn't."
_ECHO = re.compile(
    r"(?:(?:yes|no|sorry|sure),? )?(?:i|we|you|it|they|he|she|that)"
    r" (?:sure |certainly |definitely |absolutely |really |surely )?(?:do|does|can|will|is|are|am|did|would)"
    r"(?: not)?"
)
# "payouts are instant", "it's dispatched the same day", "a 30-night trial": when, or how long
_SOON = re.compile(
    r"\b(?:instant(?:ly)?|immediately|right away|straight away|same day|next day|overnight|today|tomorrow)\b"
    r"|\d\s*-?\s*nights?\b"
)
# "Nothing — you're still within the grace period" for "what's the late fee on the 7th?"
_FREE = re.compile(r"\bfree\b|\bno (?:charge|cost|fee)\b|^nothing\b")
# "55 x 40 x 23 cm", "21.5 x 15.5 x 9 in": a size given as its dimensions
_SIZE = re.compile(r"\d(?:[\d.,]*)\s*(?:[a-z]{1,2}\s*)?[x×]\s*\d")
# a place or a way through menus: "under My Trips → your booking", "in the app, under Account"
_PLACE = re.compile(
    r"[→»>]|^(?:it is |it |they are |you will find (?:it|them) )?(?:under|in|on|at|inside|via)\b"
    r"|^(?:go|head) to\b"
)
# a restricted or conditional yes or no: "Only on Flex fares", "They do if the account is idle"
_CONDITIONAL = re.compile(r" (?:if|when|unless|as long as|provided|once|only|but|after|before|within)\b")
_ONLY = re.compile(r"^only (?:if|on|at|with|for|when|in|after|before|within|up to|by|until|through)\b")
_WH = re.compile(r"\b(?:what|when|where|which|who|whom|whose|why|how)\b")
_AUXILIARY = re.compile(
    r"^\W*(?:can|could|do|does|did|is|are|was|were|will|would|should|may|am|have|has|must)\b"
)


def shows_answer_type(question: str, reference: str, facts: Sequence[Fact], answer: str) -> bool | None:
    """True when the answer has the expected shape, False when not, None when nothing is expected.

    The question's form decides first (a yes/no question wants a yes or a no, "how much" an
    amount); the reference's quantities only say what shape an open question wants.
    """
    answer_tokens, question_tokens = Tokenised.of(answer), Tokenised.of(question)
    # a fact the question already names ("Final Sale") is an echo, not an answer; "48 hours" is an
    # answer to "it's been two days"
    if any(find_fact(f, answer_tokens) and not names_fact(f, question_tokens) for f in facts):
        return True
    wanted = _asked_kinds(question)
    polar = is_polar(question)
    # "We don't offer any" for "do you do ...?" denies with the question's own auxiliary: a no (a plain
    # "You can update the email" for "can I change the address?" may answer another question)
    polar_no = opening_polarity(answer, question) < 0
    if (polar or asks_yes_or_no(question)) and (_starts_with_polarity(answer) or polar_no):
        return True
    if _counts_what_was_asked(question, answer):
        return True
    known = [q for q in Tokenised.of(reference).quantities if q.dimension != "number"]
    known += [q for fact in facts for a in alternatives(fact) for q in Tokenised.of(a).quantities]
    if not wanted and not polar:
        wanted = {q.dimension for q in known}
    if not wanted:
        return False if polar else None
    return _states_wanted_kind(answer, answer_tokens, wanted, known)


def asks_yes_or_no(question: str) -> bool:
    """A yes/no question, also one asked at the end ("..., is that from you?") or elliptically
    ("Allowed in cabin?"): a question part that opens with an auxiliary, or has no wh-word and asks
    for no quantity ("Replacement card cost?" asks a price)."""
    plain = expand_contractions(question)
    asked = [part for part in re.findall(r"[^.!?]*\?", plain) if part.strip(" ?")]
    if not asked:
        return False
    parts = re.split(r"[,;:\u2014\u2013]|\s-\s", asked[-1])
    if any(_AUXILIARY.match(without_greeting(part.strip())) for part in parts):
        return True
    return not _WH.search(asked[-1]) and not _asked_kinds(asked[-1])


def _counts_what_was_asked(question: str, answer: str) -> bool:
    """ "How many miles ...?" answered "25,000 miles": a number of the very thing asked about."""
    asked = re.search(r"\bhow many ([a-z]{3,})", expand_contractions(question))
    if asked is None:
        return False
    stem = re.escape(asked.group(1)[:4])
    return bool(re.search(rf"\d[\d,.]*\s*(?:[a-z]+\s)?{stem}", answer.lower()))


def states_other_kind(question: str, answer: str) -> bool:
    """The question asks for one kind of quantity and the answer gives only another kind.

    "How long ...?" answered with a price, "how much ...?" with a duration, "how many ...?" with
    only prices: the answer addresses a different question.
    """
    wanted = _asked_kinds(question, strict=True)
    # the question's own figure repeated back ("a 30 kg bag can't be checked in") answers nothing else
    asked = {(q.low, q.high, q.unit) for q in Tokenised.of(question).quantities}
    stated = {q.dimension for q in Tokenised.of(answer).quantities if (q.low, q.high, q.unit) not in asked}
    stated -= {"number", "count", "clock"}
    if not wanted or not stated or stated & wanted:
        return False
    if wanted & {"count", "number"}:
        return stated <= _MONEY
    return True


def states_other_dimension(question: str, answer: str) -> bool:
    """The question asks one dimension and the answer gives a length only for another.

    "How tall is it?" answered "36 inches wide" answers the neighbouring question. Width and length
    are one group ("how long is the sofa?" "84 inches wide"), height and depth each their own.
    """
    asked = _dimensions(re.findall(r"\bhow (tall|high|deep|wide|long)\b", expand_contractions(question)))
    if len(asked) != 1 or not any(q.dimension == "length" for q in Tokenised.of(answer).quantities):
        return False
    named = re.findall(r"\b(tall|high|height|deep|depth|wide|width|long|length)\b", answer.lower())
    given = _dimensions(named)
    return bool(given) and not asked & given


def _dimensions(words: Sequence[str]) -> set[str]:
    return {_DIMENSION[word] for word in words}


_DIMENSION = {
    **dict.fromkeys(["tall", "high", "height"], "height"),
    **dict.fromkeys(["deep", "depth"], "depth"),
    **dict.fromkeys(["wide", "width", "long", "length"], "width"),
}


def _asked_kinds(question: str, *, strict: bool = False) -> set[str]:
    """The kinds of quantity the question's words ask for (``strict``: only unambiguous asks)."""
    plain_question = expand_contractions(question)
    patterns = _ASKS if strict else _WANTS
    return set().union(*(kinds for pattern, kinds in patterns if pattern.search(plain_question)))


def _states_wanted_kind(
    answer: str, answer_tokens: Tokenised, wanted: set[str], known: list[Quantity]
) -> bool:
    plain = expand_contractions(answer).lower()
    if wanted & _MONEY and _FREE.search(plain):
        return True
    if "length" in wanted and _SIZE.search(plain):
        return True
    if "place" in wanted and _PLACE.search(plain.strip(" *-\"'")):
        return True
    if wanted & _DURATION and _SOON.search(plain):
        return True
    for stated in answer_tokens.quantities:
        if stated.dimension not in wanted:
            continue
        comparable = [q for q in known if q.dimension == stated.dimension]
        if not comparable or any(stated.scale_ratio(q) <= 30 for q in comparable):
            return True
    return False


def _starts_with_polarity(answer: str) -> bool:
    """A yes or a no opens the answer ("Yep", "Sorry, no", "We do!", "Please don't")."""
    clauses = analyse(answer).clauses
    if not clauses:
        return False
    first = clauses[0].plain
    echo = _ECHO.match(first)
    echoed = echo is not None and (echo.end() == len(first) or bool(_CONDITIONAL.match(first[echo.end() :])))
    return bool(_POLARITY.search(first) or _ONLY.match(first) or echoed) or clauses[0].kind == "refusal"
