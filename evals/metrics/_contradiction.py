"""Claims in an answer that contradict the reference answer or the required facts.

Five kinds, each named in the reason: a quantity that conflicts with the reference's value for the
same thing (same dimension and scale, and either said about the same words, restated after a
self-correction, or the only value of its kind the answer gives), including a limit the known value
breaks ("under a kilo" for 1.6 kg), the right value restated wrongly in another unit ("150 kg, about
230 lb") or in another currency ("32 euro" for £32), the right value per another thing or in another
time zone (``_qualifiers``), the right duration counted from another event or in business instead of
calendar days. Not a conflict: the user's own figure repeated back (unless a fact asks for a value
of its kind and the answer does not give it), the very number a unitless fact asks for ("800"
miles), a band that starts at a limit the answer also gives ("between 23 and 32 kg there's a
fee"), or a value retracted by a self-correction that goes on to the right value ("It's $3 —
actually, correction: $3 is the fee for changing. Cancelling costs $7.50"). Polarity
(``_polarity``): a negated fact, the opposite yes or no. Denials (``_denials``): what the reference
denies stated, or what it states denied. And an unqualified universal claim ("always",
"permanently", "for everyone", "no matter what") the reference does not make (not one the user asked
with, a denied one, one in an instruction, an option, "you can always pay cash", one inside an
if-clause, "every day" where the reference says "7 days a week", or "any time up to 72 hours before
delivery" where the reference sets that window; "no limit" and "as many as you like" are backed by
"unlimited", "instantly" by "instant"; "worldwide" and "to any country" are universal claims too).
The customer said to choose what the reference says the company decides ("then you choose whether you
want a repair" for "Oakline then decides whether to repair"). The other of two values picked ("whichever
is lower" where the reference takes the greater). A condition none of whose words the reference or the
question uses ("but only if the amount is under £100", "as long as they are unused"; not "unless",
which often names a fair exception, nor "for as long as 56 days"). A rule (covers, applies, included,
available) said to hold "too", "as well" or "also" for something neither names ("and that applies to
cash withdrawals too", "it also covers accidental damage"), or a requirement added with "also" ("a
doctor's note is also required"). One more value in a list of the reference's
values ("£0, £100, £250, £500 or £1,000"). "Every type of", "of any age" and "no weight limit" are
universal claims too. The user's own figure is no claim when the answer gives the fact in another of
its wordings ("90 days, so a month is fine" where a fact says "90 days" or "three months"). The
number a bare fact asks for is no conflict, but may still be counted from another event ("120 days
from when you noticed it" for "of the transaction date") but not per another thing ("10,000 tracks in
total" for "on each device"). A total of two right values the answer gives ("£35 + £99 = £134") is no
conflict. "24/7" is a universal claim where the reference gives hours ("every day, 8 am-10 pm"), as
are "whether or not" and "whatever addresses you like"; "always" opening a clause ("but always check
the advice") instructs. A universal claim a required fact words ("cancel any time") is no new claim,
nor "everything" where the reference says "in full", nor "are always free" where a sentence of the
reference says the same without any hedge; one the reference denies ("guaranteed" for "this isn't
guaranteed") is a conflict. One more option beside the reference's only one ("64GB or 128GB" for "64GB
only"); a threshold in a condition ("if 3 or more days") against the reference's ("only if 2 or more
days"); the working of a right result ("£38 + £5 = £43"); a thing given the opposite outcome
(``_opposites``: "the deposit is refunded" for "the deposit is forfeited"). What it cannot see: wrong
claims with no number, negation, universal word, "only if", "also" or "too" in them, such as an extra
country in a list, an extra fee or exception, or a value attributed to the wrong product unless the
answer gives two of the reference's values the other way round ("Comfort: -7 °C. Limit: -1 °C." for
"comfort -1 °C, limit -7 °C"), each with the words of the other and none of its own.
"""

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evals.metrics._denials import denial_conflicts
from evals.metrics._exclusive import exclusivity_conflicts
from evals.metrics._facts import STOPWORDS, Tokenised, alternatives
from evals.metrics._opposites import opposite_outcomes
from evals.metrics._polarity import negated_at, polarity_conflicts
from evals.metrics._qualifiers import qualifier_conflicts
from evals.metrics._quantities import UNITS, Quantity, quantities
from evals.metrics._text import BOUNDARY, clean, expand_contractions, match_tokens, normalise
from evals.sets.format import Fact

_CONTEXT = 4  # meaningful words either side of a quantity that say what it is about
_LABEL_WORDS = 3  # words either side of a value that name it, for values given the other way round
_MAX_SCALE = 30.0  # quantities further apart than this are about different things
_CONVERSION_REACH = 6  # words between a value and the same value said in another unit
_ROUNDING = 0.1  # "1.4 kg, about 3 lb" rounds (3.09 lb); "150 kg, about 230 lb" is wrong
_CURRENCIES = {"usd", "eur", "gbp"}
_CONDITIONS = {"if", "unless", "once", "whenever", "case"}
_CORRECTION = re.compile(
    r"\b(?:actually|scratch that|wait|correction|i mean|i meant|not quite|on second thought|my mistake"
    r"|my bad|rather|sorry)\b"
)
_FILLER = {"although", "though", "however", "actually", "also", "still", "even", "please", "now", "like",
           "around", "expect", "take", "takes", "usual", "anyway", "instead", "pretty"}  # fmt: skip
_WEEKDAYS_ONLY = {"business", "weekday", "working"}
_WEEKEND = {"weekend", "saturday", "sunday"}
_INCLUDING = {"includ", "including", "include", "too", "also", "even", "count", "counted", "plus"}
_EXCLUDING = {"excluding", "exclude", "exclud", "except", "besides", "apart", "off", "closed", "not", "no"}
_COUNTED_FROM = {"from", "after", "of", "since", "following", "past"}
# inequalities ("under a kilo"), not a stated maximum ("up to 30 days", "within 14 days")
_UPPER_BOUNDS = ("under", "below", "less than", "fewer than")
_LOWER_BOUNDS = ("over", "above", "at least", "upwards of")
_CLAIM_VERBS = {"is", "are", "was", "were", "be", "weigh", "weighs", "take", "takes", "cost", "costs", "last",
                "lasts", "run", "runs", "hold", "holds", "just", "only", "well", "still", "it"}  # fmt: skip
_UNIT_WORDS = {*UNITS, "business", "calendar", "minus"}
_EVENTS = {  # match tokens: "delivered" is stemmed to "deliver", "placed" to "plac"
    **dict.fromkeys(
        ["delivery", "deliver", "arrival", "arrive", "arriv", "receipt", "receiv", "receiving"], "delivery"
    ),
    **dict.fromkeys(["order", "ordering", "purchase", "purchas", "buy", "plac", "checkout"], "order"),
    **dict.fromkeys(["dispatch", "ship", "shipp"], "dispatch"),
    **dict.fromkeys(["transaction"], "order"),
    # when the customer noticed a fault or a charge is a later event than the purchase itself
    **dict.fromkeys(
        ["notice", "notic", "noticing", "discover", "discovering", "spott", "spotting"], "discovery"
    ),
    # the care or service itself, and the bill for it, are events of their own ("of the treatment date")
    **dict.fromkeys(["treatment", "treat", "appointment", "visit"], "treatment"),
    **dict.fromkeys(["invoice", "invoic", "bill", "statement"], "invoice"),
}
_UNIVERSAL = re.compile(
    r"\b(always|every ?time|every day|everything|lifetime|for life|forever|permanent(?:ly)?|unlimited"
    r"|instant(?:ly)?|no matter|regardless|whether or not|guaranteed|any ?time|24/7|no questions asked"
    r"|without exception|whatever (?:you|they|the)|(?:whichever|whatever) \w+ (?:you|they)|at any point"
    r"|everyone|everybody"
    r"|worldwide|anywhere in the world|(?:to|in) any country"
    r"|no (?:[a-z-]+ )?limit"
    r"|(?:every|any|all) (?:types?|kinds?|sorts?) of|(?:of|at) any (?:age|size|length|weight|value|amount)"
    r"|as (?:many|much|often)(?: \w+){0,2} as you (?:like|want|wish))\b"
)
# one claim in many words: "no limit" says what "unlimited" or "as often as you like" says
_LIMITLESS = re.compile(
    r"\b(?:unlimited|no (?:[a-z-]+ )?(?:limit|cap|maximum)|as (?:many|much|often)\b[^.]{0,20}\bas you)"
)
_OFTEN = re.compile(r"as often\b")
_WHATEVER = re.compile(r"whatever the\b|whichever")
_SUPERLATIVE = re.compile(r"\s*(?:\w+est|most|least|latest|first|last)\b")
_REGARDLESS = re.compile(r"no matter|regardless|whether or not")
_CAPPED = re.compile(r"\b(?:above|cap|capped|caps|max|maximum|up to|at most|more than|exceed\w*)\b")
_PEOPLE_OR_THINGS = re.compile(r"everyone|everybody|everything")
_ALL = re.compile(r"\b(?:all|All)\b")
_IN_FULL = re.compile(r"\b(?:in full|full (?:refund|amount|price|balance|cost))\b")
_EVERY_ONE = re.compile(r"\bevery (?!day\b|time\b)[a-z]+")  # not "every 1 March"
_NOT_ANYTHING = re.compile(r"\b(?:not|never)(?: \w+){0,2} anything\b", re.IGNORECASE)
_FLAT = re.compile(r"\bflat\b", re.IGNORECASE)
_EVERY = re.compile(r"\b(?:every|any|all|regardless|no matter|no minimum)\b")
# "you can always add cash" offers an option; "if you use it every day" supposes, it claims nothing
_NOT_A_CLAIM = re.compile(r"\b(?:can|could|may) (?:also )?$|\b(?:if|whenever|unless|in case)\b[^,;:\u2014]*$")
_DAILY = re.compile(r"\b(?:7 days? (?:a|per) week|daily)\b")


_TIMELESS = re.compile(
    r"never|always|forever|lifetime|for life|any ?time|every ?time|every day|24/7|indefinitely"
)


def contradictions(reference: str, facts: Sequence[Fact], answer: str, question: str = "") -> list[str]:
    """Reasons the answer contradicts the reference or the facts (empty: none found)."""
    answer_tokens = Tokenised.of(answer)
    worked = _worked_operands(answer, Tokenised.of(reference).quantities)
    reasons = _quantity_conflicts(reference, facts, answer_tokens, Tokenised.of(question), worked)
    reasons += polarity_conflicts(question, reference, facts, answer)
    reasons += denial_conflicts(question, reference, answer)
    reasons += _universal_claims(reference, answer, question, facts)
    reasons += _weekend_claims(reference, answer_tokens)
    reasons += _choice_conflicts(reference, answer)
    reasons += _decider_conflicts(reference, answer)
    reasons += _added_conditions(reference, answer, question)
    reasons += _added_requirements(reference, answer, question)
    reasons += _extended_scope(reference, answer, question)
    reasons += _swapped_values(Tokenised.of(reference), answer_tokens)
    reasons += exclusivity_conflicts(reference, answer)
    reasons += opposite_outcomes(reference, answer)
    return reasons


def _swapped_values(reference: Tokenised, answer: Tokenised) -> list[str]:
    """Two of the reference's values given the other way round ("the blender is rated 1,700 W, the air
    fryer 1,500 W" where the reference rates the air fryer 1,700 W): each said with the words of the
    other, and with none of its own."""
    known = [q for q in reference.quantities if q.dimension != "number"]
    stated = [q for q in answer.quantities if q.dimension != "number"]
    for first, second in itertools.combinations(stated, 2):
        if first.dimension != second.dimension or first.same_value(second):
            continue
        theirs = [[q for q in known if _agrees(mine, q)] for mine in (first, second)]
        if any(len(found) != 1 for found in theirs) or theirs[0][0].same_value(theirs[1][0]):
            continue
        said = [_label(answer.words, q.position) for q in (first, second)]
        meant = [_label(reference.words, found[0].position) for found in theirs]
        own = [meant[0] - meant[1], meant[1] - meant[0]]
        if all(said[i] & own[1 - i] and not said[i] & own[i] for i in (0, 1)):
            return [f"gives {_show(first)} and {_show(second)} the other way round"]
    return []


def _label(words: list[str], position: int) -> set[str]:
    """The words that name what a value is: a few after it in its clause, and a few before it, across
    one colon or comma when nothing comes first ("Comfort: -7 °C")."""
    after = list(itertools.takewhile(lambda word: word != BOUNDARY, words[position + 1 :]))
    return _naming(reversed(words[:position])) | _naming(after)


def _naming(words: Iterable[str]) -> set[str]:
    found: set[str] = set()
    crossed = False
    for word in words:
        if word == BOUNDARY:
            if found or crossed:
                break
            crossed = True
            continue
        word = word.removesuffix("'s")
        if word.isalpha() and len(word) > 2 and word not in STOPWORDS and word not in _UNIT_WORDS:
            found.add(word)
            if len(found) == _LABEL_WORDS:
                break
    return found


# "only if you drop it at a depot": a condition the answer sets; "for as long as 56 days" is a duration
_CONDITION = re.compile(
    # "read-only for 90 days" names a state, it sets no condition
    r"(?<!for )(?<!-)\b(?:only (?:if|when|for|on|once|after)|as long as|provided(?: that)?|or (?:if|when))\b"
    r"([^.;:!?\u2014()]*)"
)


# "it covers debit card purchases as well": a rule stretched to something else ("too" ending a clause)
_EXTENDED = re.compile(r"([^.;:!?,\u2014]*)\b(?:too|as well)\s*(?=[.;:!?,)]|$)")
_COVERS = ("cover", "appl", "includ", "avail", "eligib", "accept", "qualif", "valid")
# "it also covers accidental damage", "PO boxes are also eligible": the same stretch said with "also"
_REQUIRES = ("requir", "mandator", "compulsor", "need")
_ALSO = re.compile(
    rf"[^.;:!?,\u2014]*\balso\b(?: \w+){{0,2}}? (?:{'|'.join(_COVERS + _REQUIRES)})\w*[^.;:!?,\u2014]*"
)


_WHEN = frozenset(["past", "last", "previous", "prior", "next", "coming", "recent"])  # "the past 12 months"


def _extended_scope(reference: str, answer: str, question: str) -> list[str]:
    """A rule (covers, applies, included, available) said to hold "too" or "also" for something the
    reference and the question never name ("and that applies to cash withdrawals too", "it also covers
    accidental damage")."""
    known = {_stem_loose(w) for w in [*match_tokens(reference), *match_tokens(question)]}
    reasons = []
    plain = expand_contractions(answer)
    for found in [*_EXTENDED.finditer(plain), *_ALSO.finditer(plain.lower())]:
        words = match_tokens(found[1] if found.re is _EXTENDED else found[0])
        if not any(w.startswith(_COVERS + _REQUIRES) for w in words):
            continue
        new = {
            w
            for w in words
            if w.isalpha() and len(w) > 2 and w not in STOPWORDS | _WHEN and _stem_loose(w) not in known
        }
        if new - {w for w in words if w.startswith(_COVERS + _REQUIRES)}:
            reasons.append(f"extends it to what the reference does not name: '{found[0].strip()}'")
    return reasons


def _added_conditions(reference: str, answer: str, question: str) -> list[str]:
    """A condition or exception whose every word is new to the reference and the question
    ("but only if the amount is under £100", "unless you tell us before you travel")."""
    known = {_stem_loose(w) for w in [*match_tokens(reference), *match_tokens(question)]}
    reasons = []
    for found in _CONDITION.finditer(expand_contractions(answer)):
        said = {
            _stem_loose(w)
            for w in match_tokens(found[1])
            if w.isalpha() and len(w) > 2 and w not in STOPWORDS
        }
        if said and not said & known:
            reasons.append(f"adds a condition the reference does not set: '{found[0].strip()}'")
    return reasons


# "she must have had her first vaccinations", "it includes the Exam Prep add-on": a duty or an inclusion
# ("you'll need to", "you have to" are left out: answers spell out the reference's own steps with them)
_DUTY = re.compile(
    r"\b(?:must(?: also)?(?! not)|(?:it |which |that )?(?:also )?includes?|comes with)\b([^.;:!?\u2014()]*)"
)
_NEW_SHARE = 2 / 3  # of the duty's words new to the reference and the question


def _added_requirements(reference: str, answer: str, question: str) -> list[str]:
    """A duty or an inclusion most of whose words are new to the reference and the question ("the claim
    form must be signed and stamped by your vet", "and it includes the Exam Prep add-on"): at least two
    new words, and two in three of its words new."""
    known = {_stem_loose(w) for w in [*match_tokens(reference), *match_tokens(question)]}
    reasons = []
    for found in _DUTY.finditer(expand_contractions(answer)):
        said = {
            _stem_loose(w)
            for w in match_tokens(found[1])[:8]
            if w.isalpha() and len(w) > 2 and w not in STOPWORDS
        }
        new = said - known
        if len(new) >= 2 and len(new) >= _NEW_SHARE * len(said):
            reasons.append(f"adds a duty or inclusion the reference does not state: '{found[0].strip()}'")
    return reasons


def _stem_loose(word: str) -> str:
    return word[:5]


_SIDES = {
    **dict.fromkeys(["greater", "higher", "larger", "bigger"], "higher"),
    **dict.fromkeys(["lower", "lesser", "smaller"], "lower"),
    **dict.fromkeys(["later", "latest"], "later"),
    **dict.fromkeys(["earlier", "earliest", "sooner"], "earlier"),
}
_OPPOSITE = {"higher": "lower", "lower": "higher", "later": "earlier", "earlier": "later"}
_CHOICE = re.compile(rf"\b(?:the ({'|'.join(_SIDES)}) of|whichever (?:is|comes) ({'|'.join(_SIDES)}))\b")


def _choice_conflicts(reference: str, answer: str) -> list[str]:
    """The other of two values picked ("whichever is lower of £25 or 1%" where the reference takes the
    greater)."""
    theirs = {_SIDES[m[1] or m[2]] for m in _CHOICE.finditer(clean(reference).lower())}
    mine = {_SIDES[m[1] or m[2]] for m in _CHOICE.finditer(re.sub(r"[*_]", "", clean(answer).lower()))}
    return [
        f"takes the {side} of the values where the reference takes the {_OPPOSITE[side]}"
        for side in sorted(mine)
        if _OPPOSITE[side] in theirs and side not in theirs
    ]


# who makes a choice: "Oakline then decides", "at our discretion" / "you choose", "it's up to you"
_THEY_DECIDE = re.compile(
    r"\b(?!(?:you|customers?|members?|buyers?|guests?|users?|clients?|holders?|owners?|patients?|"
    r"passengers?|travell?ers?|students?|parents?|recipients?|senders?|famil(?:y|ies)|households?|"
    r"subscribers?|tenants?|policyholders?|applicants?|drivers?|riders?)\b)"
    r"[a-z]+ (?:then |alone |itself |will |may |always )?(?:decides?|determines?|chooses?)\b"
    r"|\bat (?:our|its|their) (?:sole |own )?discretion\b|\bup to us\b"
)
_YOU_DECIDE = re.compile(
    r"\byou (?:then |can |may |will |get to |are free to |are able to )?(?:choose|decide|pick)\b"
    r"|\bup to you\b|\byour (?:choice|call)\b"
)


def _decider_conflicts(reference: str, answer: str) -> list[str]:
    """The customer said to make a choice the reference leaves to the company ("then you choose whether
    you want a repair or a refund" where "Oakline then decides whether to repair ... or refund")."""
    theirs, mine = expand_contractions(reference), expand_contractions(answer)
    if _THEY_DECIDE.search(theirs) and not _YOU_DECIDE.search(theirs) and _YOU_DECIDE.search(mine):
        return ["lets the customer choose what the reference says the company decides"]
    return []


def _weekend_claims(reference: str, answer: Tokenised) -> list[str]:
    """Weekends said to count ("weekends included") where the reference counts business days only."""
    known = set(match_tokens(reference))
    if not known & _WEEKDAYS_ONLY or known & _WEEKEND:
        return []
    for index, word in enumerate(answer.words):
        nearby = set(answer.words[max(0, index - 3) : index + 3])
        counted = nearby & _INCLUDING and not nearby & _EXCLUDING
        if word in _WEEKEND and counted and not negated_at(answer.words, index):
            return [f"counts the {word} where the reference counts business days"]
    return []


def _quantity_conflicts(
    reference: str,
    facts: Sequence[Fact],
    answer: Tokenised,
    question: Tokenised,
    worked: Sequence[Quantity] = (),
) -> list[str]:
    sources = [Tokenised.of(reference)] + [Tokenised.of(a) for fact in facts for a in alternatives(fact)]
    known = [(q, source) for source in sources for q in source.quantities if q.dimension != "number"]
    told = set(match_tokens(reference)) | set(question.words)
    # the values the facts ask for and the answer does not give in any of their wordings ("90 days" gives
    # "three months" too)
    asked_for = [
        q
        for fact in facts
        if not _gives(answer, fact)
        for a in alternatives(fact)
        for q in Tokenised.of(a).quantities
    ]
    bare = [
        q for fact in facts if _bare(fact) for a in alternatives(fact) for q in Tokenised.of(a).quantities
    ]
    reasons = []
    for stated in answer.quantities:
        if stated.dimension == "number" or negated_at(answer.words, stated.position):
            continue
        if any((q.low, q.high) == (stated.low, stated.high) for q in bare):
            # the very number a fact asks for ("800" miles earned on a 400 euro booking), though it may
            # still be counted from another event ("120 days from when you noticed it")
            same = [
                (q, source) for q, source in known if q.dimension == stated.dimension and _agrees(stated, q)
            ]
            reasons += _anchor_conflicts(stated, answer.words, same)
            reasons += qualifier_conflicts(stated, answer.words, [(q, src.words) for q, src in same])
            continue
        conditional = _conditional_at(answer.words, stated.position)
        rivals = [
            (q, source)
            for q, source in known
            if q.dimension == stated.dimension
            and (q.dimension != "count" or q.unit == stated.unit)
            and stated.scale_ratio(q) <= _MAX_SCALE
        ]
        if conditional:
            # "if three or more days are closed" where the reference's own condition says "2 or more"
            reasons += _threshold_conflicts(stated, answer.words, rivals)
            continue
        if not rivals:
            reasons += _other_currency(stated, [q for q, _ in known], question.quantities)
            continue
        agreed_with = [(q, source) for q, source in rivals if _agrees(stated, q)]
        if agreed_with:
            reasons += _anchor_conflicts(stated, answer.words, agreed_with)
            reasons += _day_kind_conflicts(stated, [q for q, _ in agreed_with])
            reasons += qualifier_conflicts(stated, answer.words, [(q, src.words) for q, src in agreed_with])
            continue
        agreeing = [other for other in answer.quantities if any(_agrees(other, q) for q, _ in rivals)]
        if _retracted(answer, stated, agreeing):
            continue
        bound = _bound_at(answer.words, stated.position)
        if bound is not None and bound.consistent_with(stated, [q for q, _ in rivals]):
            continue
        # the user's own figure repeated back ("so an $80 order qualifies"); a claim only when it may
        # stand in for a value the facts ask for and the answer does not give that value
        checked = any(q.dimension == stated.dimension for q in asked_for)
        if (agreeing or not checked) and any(stated.same_value(asked) for asked in question.quantities):
            continue
        if agreeing and any(_continues(stated, q) for q, _ in rivals):
            continue  # "between 23 and 32 kg there's a fee": the band beyond a 23 kg limit
        if _summed(stated, agreeing):
            continue  # "£35 + £99 = £134 in total": a total of the answer's own right values
        if any(stated.same_value(q) for q in worked):
            continue  # "£38 + £5 = £43": the working of a right result
        about_same = any(_shared_context(answer.words, stated, source.words, q) for q, source in rivals)
        about_same |= _restates(answer.words, stated, agreeing, told) or _converts(stated, agreeing)
        # "128GB or 256GB" where the reference says "128GB only": one more option beside the only one
        only = any("only" in source.words[max(0, q.position - 2) : q.position + 3] for q, source in rivals)
        about_same |= (len(rivals) > 1 or only) and _listed_with(answer, stated, agreeing, 1 if only else 2)
        if about_same or not agreeing or (bound is not None and bound.claimed):
            expected = rivals[0][0]
            reasons.append(f"says {_show(stated, bound)} where the reference says {_show(expected)}")
    return reasons


def _threshold_conflicts(
    stated: Quantity, words: Sequence[str], rivals: list[tuple[Quantity, Tokenised]]
) -> list[str]:
    """A threshold in a condition of the answer ("if 3 or more days") where the reference's condition
    sets another for the same unit ("only if 2 or more consecutive days"): the same bound word after
    both ("or more") and no value of the reference's conditions that agrees."""
    bound = words[stated.position + 1 : stated.position + 3]
    theirs = [
        q
        for q, source in rivals
        if q.unit == stated.unit
        and _conditional_at(list(source.words), q.position)
        and source.words[q.position + 1 : q.position + 3] == bound
    ]
    if bound not in (["or", "more"], ["or", "less"], ["or", "fewer"]) or not theirs:
        return []
    if any(_agrees(stated, q) for q in theirs):
        return []
    return [f"sets the condition at {_show(stated)} where the reference sets {_show(theirs[0])}"]


_EQUATION = re.compile(
    r"(\d+(?:\.\d+)?)((?: [a-z]+)?) ?([+\-x\u00d7*]) ?(\d+(?:\.\d+)?)((?: [a-z]+)?)"
    r" ?= ?\W*(\d+(?:\.\d+)?)((?: [a-z]+)?)"
)
_OPERATIONS = {
    "+": float.__add__,
    "-": float.__sub__,
    "x": float.__mul__,
    "\u00d7": float.__mul__,
    "*": float.__mul__,
}


def _worked_operands(answer: str, known: list[Quantity]) -> list[Quantity]:
    """The operands of a sum the answer works out ("£38 + £5 = £43"), when the result is right: the
    arithmetic holds and the result agrees with a value of the reference's."""
    operands = []
    for found in _EQUATION.finditer(normalise(answer)):
        first, first_unit, operation, second, second_unit, result, result_unit = found.groups()
        worked = _OPERATIONS[operation](float(first), float(second))
        if abs(worked - float(result)) > 0.011:
            continue
        right = [q for q in quantities(f"{result}{result_unit}") if any(_agrees(q, k) for k in known)]
        if right:
            operands += quantities(f"{first}{first_unit}") + quantities(f"{second}{second_unit}")
    return operands


def _summed(stated: Quantity, agreeing: list[Quantity]) -> bool:
    """Whether ``stated`` is the sum of two values the answer gives earlier that agree with the reference."""
    if stated.low != stated.high:
        return False
    before = [
        q for q in agreeing if q.position < stated.position and q.low == q.high and q.unit == stated.unit
    ]
    return any(abs(a.low + b.low - stated.low) < 1e-6 for i, a in enumerate(before) for b in before[i + 1 :])


@dataclass(frozen=True)
class _Bound:
    """A stated limit ("under 1 kg", "at least 2 years") rather than a value."""

    upper: bool
    claimed: bool  # said of the thing ("it is under 1 kg"), not a qualifier ("orders over $75")

    def consistent_with(self, stated: Quantity, known: list[Quantity]) -> bool:
        """Whether some known value lies within the limit."""
        limit_low, limit_high = stated.base()
        if self.upper:
            return any(q.base()[1] <= limit_high for q in known)
        return any(q.base()[0] >= limit_low for q in known)


def _bound_at(words: list[str], position: int) -> _Bound | None:
    before = words[max(0, position - 3) : position]
    if before and before[-1] == "minus":
        before = words[max(0, position - 4) : position - 1]
    joined = " ".join(before)
    for phrases, upper in ((_UPPER_BOUNDS, True), (_LOWER_BOUNDS, False)):
        for phrase in phrases:
            if joined == phrase or joined.endswith(" " + phrase):
                lead = joined[: -len(phrase)].split()
                return _Bound(upper, bool(lead) and lead[-1] in _CLAIM_VERBS)
    return None


def _day_kind_conflicts(stated: Quantity, known: list[Quantity]) -> list[str]:
    """Business days where the reference says calendar days, or the other way round."""
    for q in known:
        if (stated.business and q.calendar) or (stated.calendar and q.business):
            mine, theirs = ("business", "calendar") if stated.business else ("calendar", "business")
            return [f"counts {_show(stated)} in {mine} days where the reference counts {theirs} days"]
    return []


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
    pause = next((i for i, word in enumerate(window[:3]) if word == BOUNDARY), None)
    if pause is not None and window[pause + 1 : pause + 2] in (["count"], ["starting"]):
        longer = words[position + 1 : position + 16]
        window = longer[:pause] + longer[pause + 1 :]  # "90 days, counted from ...": one clause
    for index, word in enumerate(window):
        if word == BOUNDARY:
            break
        event = _EVENTS.get(word)
        # counted from an event: "of delivery", "from when you place the order"; not "on every order"
        counted = _COUNTED_FROM & set(window[:index])
        if event and counted and not {"not", "no"} & set(window[max(0, index - 3) : index]):
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


def _retracted(answer: Tokenised, stated: Quantity, agreeing: list[Quantity]) -> bool:
    """Said before a self-correction that goes on to the right value ("It's $3 — actually, correction:
    $3 is the fee for changing. Cancelling costs $7.50"), also when the correction names it again."""
    joined = " ".join(answer.words)
    for found in _CORRECTION.finditer(joined):
        at = joined[: found.start()].count(" ")
        before = [q for q in answer.quantities if q.position < at and q.same_value(stated)]
        if before and any(q.position > at for q in agreeing):
            return True
    return False


def _other_currency(stated: Quantity, known: list[Quantity], asked: list[Quantity]) -> list[str]:
    """The reference's amount in another currency ("32 euro" for £32): a conversion changes the number."""
    if stated.dimension not in _CURRENCIES or any(q.dimension == stated.dimension for q in asked):
        return []
    for q in known:
        if q.dimension in _CURRENCIES - {stated.dimension} and (q.low, q.high) == (stated.low, stated.high):
            return [f"says {_show(stated)} where the reference says {_show(q)}"]
    return []


def _gives(answer: Tokenised, fact: Fact) -> bool:
    """The answer states one of the fact's values."""
    wanted = [q for a in alternatives(fact) for q in Tokenised.of(a).quantities]
    return any(stated.same_value(q) for stated in answer.quantities for q in wanted)


def _bare(fact: Fact) -> bool:
    """A fact that is a number with no unit in every wording ("800", "eight hundred")."""
    found = [q for a in alternatives(fact) for q in Tokenised.of(a).quantities]
    return bool(found) and all(q.dimension == "number" for q in found)


def _continues(stated: Quantity, known: Quantity) -> bool:
    """A range that starts where the known value ends: what lies beyond a limit, not the limit."""
    return stated.low != stated.high and known.low == known.high and stated.base()[0] == known.base()[1]


def _restates(words: list[str], stated: Quantity, agreeing: list[Quantity], told: set[str]) -> bool:
    """The answer gives the right value and another for the same thing ("5 years ... no, 3 years").

    The other value is about the same thing when the answer corrects itself before it ("actually,
    scratch that"), or when the words around it name something the question or reference names,
    and nothing the right value's words do not ("comfort rating" is not "limit temperature").
    """
    if not agreeing:
        return False
    earlier = [other.position for other in agreeing if other.position < stated.position]
    if earlier and _CORRECTION.search(" ".join(words[max(earlier) : stated.position])):
        return True
    mine = {
        word for word in _context(words, stated.position) if word not in _FILLER and not word.endswith("ly")
    }
    if not mine & told:
        return False
    theirs = set().union(*(_context(words, other.position) for other in agreeing))
    return not mine - told - theirs


_LIST_GLUE = frozenset([BOUNDARY, "or", "and"])


def _listed_with(answer: Tokenised, stated: Quantity, agreeing: list[Quantity], least: int = 2) -> bool:
    """One more value in a list of ``least`` or more of the reference's values ("£0, £100, £250, £500 or
    £1,000" where the reference offers the first four): a list runs from value to value with only commas,
    "and", "or"."""
    chain = [stated]
    values = sorted(answer.quantities, key=lambda q: q.position)
    at = values.index(stated)
    for step in (-1, 1):
        index = at
        while 0 <= index + step < len(values):
            near, far = sorted((values[index], values[index + step]), key=lambda q: q.position)
            between = answer.words[near.position + 1 : far.position]
            glue = _LIST_GLUE | _UNIT_WORDS | {near.unit}  # "128 gb or 256 gb": a count's own noun too
            if far.dimension != stated.dimension or not set(between) <= glue:
                break
            index += step
            chain.append(values[index])
    return sum(1 for q in chain if q in agreeing) >= least


def _converts(stated: Quantity, agreeing: list[Quantity]) -> bool:
    """The right value restated wrongly in another unit ("150 kg, which is about 230 lb")."""
    return any(
        other.unit != stated.unit
        and 0 < stated.position - other.position <= _CONVERSION_REACH
        and abs(stated.base()[1] - other.base()[1]) > _ROUNDING * abs(other.base()[1])
        for other in agreeing
        if other.dimension == stated.dimension
    )


def _shared_context(words: list[str], stated: Quantity, other_words: list[str], other: Quantity) -> bool:
    return bool(_context(words, stated.position) & _context(other_words, other.position))


def _context(words: list[str], position: int) -> set[str]:
    """Up to ``_CONTEXT`` meaningful words either side of a quantity, within its clause."""
    found: set[str] = set()
    for side in (reversed(words[:position]), words[position + 1 :]):
        taken = 0
        for word in side:
            if word == BOUNDARY or taken == _CONTEXT:
                break
            if word not in STOPWORDS and word.isalpha() and len(word) > 2 and word not in _UNIT_WORDS:
                found.add(word)
                taken += 1
    return found


def _show(quantity: Quantity, bound: "_Bound | None" = None) -> str:
    value = f"{quantity.low:g}" + (f"-{quantity.high:g}" if quantity.high != quantity.low else "")
    limit = "" if bound is None else ("at most " if bound.upper else "at least ")
    return f"{limit}{value} {quantity.unit}".strip()


def _conditional_at(words: list[str], start: int) -> bool:
    """A threshold or a condition ("if it takes longer than 10 days"), not a claim about the value."""
    clause = []
    for index in range(start - 1, max(-1, start - 12), -1):
        if words[index] == BOUNDARY:
            break
        clause.append(words[index])
    return "than" in clause[:2] or bool(_CONDITIONS & set(clause))


def _universal_claims(
    reference: str, answer: str, question: str = "", facts: Sequence[Fact] = ()
) -> list[str]:
    # the user's own word ("do I get everything back?") answered is not a claim of the answer's, nor is a
    # wording the required facts accept ("cancel any time", "refund everything")
    wordings = [match_tokens(wording) for fact in facts for wording in alternatives(fact)]
    backing = [*match_tokens(reference), *match_tokens(question), *itertools.chain(*wordings)]
    reference_words = {w.removesuffix("ly") for w in backing}
    denied = _denied_words(reference)
    # "never expires" already says "forever": a universal about time backs the others about time
    timeless = bool(_TIMELESS.search(clean(reference).lower()))
    # "every day, 8 am-10 pm" sets hours: it does not back "24/7"
    hours = bool(_HOURS.search(" ".join(match_tokens(reference))))
    reasons = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", expand_contractions(answer)):
        for found in _UNIVERSAL.finditer(sentence):
            claim = found.group(1)
            if timeless and _TIMELESS.fullmatch(claim) and not (hours and claim == "24/7"):
                continue
            # "not always", "not quite everything" deny the universal; "please unplug everything" instructs
            if _NOT_UNIVERSAL.search(sentence[: found.start()]) or _INSTRUCTION.match(sentence):
                continue
            # "..., but always check GOV.UK advice": an instruction opening a clause
            opens_clause = _CLAUSE_OPENS.search(sentence[: found.start()])
            if claim == "always" and opens_clause and not _AUXILIARY.match(sentence[found.end() :]):
                continue
            if _NOT_A_CLAIM.search(sentence[: found.start()]):
                continue
            if claim == "always" and _said_plainly(sentence, found, reference):
                continue  # "Online bills are always free" where "Online bills are free" limits nothing
            # "any time up to 72 hours before delivery" is bounded: a window, not always
            if _ANY_TIME.fullmatch(claim) and _reference_window(sentence[found.end() :], reference):
                continue
            if claim == "every day" and _DAILY.search(normalise(reference)):
                continue  # "every day" is "7 days a week"
            if _LIMITLESS.match(claim) and _LIMITLESS.search(clean(reference).lower()):
                continue
            # "change tutors as often as you like" says again what "free at any time" says
            if _OFTEN.match(claim) and _ANY_TIME.search(clean(reference).lower()):
                continue
            # "whatever the order size" says again what "on every order" says
            # "it never goes above $5 no matter how big the invoice is" restates a cap
            if _REGARDLESS.fullmatch(claim) and (_CAPPED.search(sentence.lower()) or _FLAT.search(reference)):
                continue  # a flat fee is the same whatever the size
            if _WHATEVER.match(claim) and _EVERY.search(clean(reference).lower()):
                continue
            # "whatever the highest band is" names one band, the highest
            if _WHATEVER.match(claim) and _SUPERLATIVE.match(sentence[found.end() :]):
                continue
            # "optional for everyone else" names the rest, not everyone; "keep everything" where the
            # reference keeps "the item and all packaging" says its "all" again
            if _PEOPLE_OR_THINGS.fullmatch(claim) and (
                sentence[found.end() :].lstrip().lower().startswith("else")
                or _ALL.search(clean(reference))
                or _EVERY_ONE.search(clean(reference).lower())  # "every participant must be 18"
                # "paid in full"; "Lumora doesn't delete anything": everything stays
                or claim.lower() == "everything"
                and bool(
                    _IN_FULL.search(clean(reference).lower())
                    or _NOT_ANYTHING.search(expand_contractions(reference))
                )
            ):
                continue
            # "instantly" is what an "instant" freeze does
            claimed = {w.removesuffix("ly") for w in match_tokens(claim)}
            if claimed <= denied:  # "guaranteed" where the reference says "this isn't guaranteed"
                reasons.append(f"claims '{claim}', which the reference denies")
            elif not claimed <= reference_words:
                reasons.append(f"claims '{claim}', which the reference does not say")
    return reasons


def _denied_words(reference: str) -> set[str]:
    """The words right after a negation in the reference ("isn't guaranteed", "not always")."""
    words = match_tokens(reference)
    return {w.removesuffix("ly") for i, w in enumerate(words[1:], 1) if words[i - 1] == "not" and w.isalpha()}


_HEDGES = frozenset(["only", "unless", "if", "except", "usual", "usually", "normally", "typically", "most",
                     "generally", "often", "sometimes", "when", "may", "might", "can"])  # fmt: skip


_COPULA_BEFORE = re.compile(r"\b(?:is|are|was|were)\s+$")


def _said_plainly(sentence: str, found: re.Match[str], reference: str) -> bool:
    """The clause around "always" says only what one sentence of the reference says, and that sentence
    neither limits nor hedges it: "always" after "is" or "are" adds nothing the reference does not already
    hold ("always arrives by noon" still promises more than a timetable)."""
    if not _COPULA_BEFORE.search(sentence[: found.start()]):
        return False
    clause = re.split(r"[,;:\u2014]|\bbut\b", sentence[: found.start()])[-1] + sentence[found.end() :]
    clause = re.split(r"[,;:\u2014]|\bbut\b|\bunless\b|\bexcept\b", clause)[0]
    said = {w for w in match_tokens(clause) if w != BOUNDARY and w not in STOPWORDS}
    for theirs in re.split(r"(?<=[.!?])\s+|;\s*", reference):
        words = set(match_tokens(theirs))
        if said and said <= words and not words & _HEDGES:
            return True
    return False


_ANY_TIME = re.compile(r"any ?time|at any point")
_HOURS = re.compile(r"\b\d{1,2}:\d{2} to \d{1,2}:\d{2}\b")
_WINDOW_AFTER = re.compile(
    r"\s*(?:[a-z]+ ){0,2}?(?:up to|until|till|before|within|prior to|during|in the first)\b"
)


def _reference_window(after: str, reference: str) -> bool:
    """ "any time" bounded right after by a window the reference sets ("up to 72 hours before delivery"
    where it says "up to 72 hours before your delivery date"): every word of the bound is the reference's."""
    window = _WINDOW_AFTER.match(after)
    if window is None:
        return False
    bound = [w for w in match_tokens(after[window.end() :])[:4] if w != BOUNDARY and w not in STOPWORDS]
    return bool(bound) and set(bound) <= set(match_tokens(reference))


_CLAUSE_OPENS = re.compile(r"(?:[,;:\u2014]|\bbut|\bso)\s*$")
_AUXILIARY = re.compile(r"\s+(?:will|would|is|are|be|been|has|have|had|can|could|does|do|stays?|remains?)\b")
_NOT_UNIVERSAL = re.compile(r"\b(?:not|hardly|almost|nearly)(?: \w+)? $")
_INSTRUCTION = re.compile(r"^\W*(?:please|first|then|just|make sure|be sure|remember to)\b")
