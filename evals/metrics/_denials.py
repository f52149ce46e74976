"""Denials: what an answer states that the reference denies, or denies that the reference states.

Each named in the reason: a thing the reference denies ("no cash compensation", "loss and theft are
not covered": the thing and the denied verb; "no compensation for weather delays": also what it is
for; each of "no closing fee and no notice period"; "Basic fares include none") stated in an answer
sentence that neither denies nor limits anything ("only", "unless", "if"), and a denial below or
above a value ("parcels under 2 kg are not covered") is restated, not contradicted, by a sentence
that gives a value; a predicate denied of a subject the reference names ("store credit never
expires") stated of it, also by a pronoun or under a condition ("it expires after a year if unused";
a relative clause such as "ones that are not defective" denies nothing); what a thing is said not
to be for ("not designed for snow loads", two words or more) stated plainly, unless the sentence
says to avoid it; what the reference says is not required ("does not have to be the account
holder") said to be required ("must", "have to", "need"); something the reference prices and never
calls free said to be free, in a clause that names nothing the reference and question do not before
any condition of its own ("free if you book before Thursday"); and
what the reference says a subject does ("resetting your password unlocks it") denied of that
subject, unless the answer's clause limits it or names an object the reference does not; and what
the reference says the thing is not ("It is not dishwasher-safe", "splash resistant, not waterproof")
said of it after "is" or "are" in a clause that denies nothing; and open when the reference says
closed ("closed Sunday and on public holidays" / "also open Sundays 10-4"); what the reference asks
for ("give us the crime reference number", "you must give a meter reading") said not to be needed; a
denied thing affirmed with its verb left out ("fences aren't covered, but gates are") or named in a
list of what the reference accepts; and a charge the reference makes without any exception said to
be waived in a sentence that names something it does not ("waived if you book installation"). A £0
price backs "free". A thing the reference gives a value ("a minimum 10% deposit", "a 1-year warranty")
said not to exist ("no deposit needed"), unless the reference makes it conditional or zero; a condition
the reference sets ("returnable only if faulty") said not to matter ("even if they arrive faulty");
something the reference gives free, unconditionally, priced ("exchanges cost £50") where no priced
sentence of the reference names it; and what the reference says to keep ("keep the packaging") said to
be thrown away. A negation in a condition ("refunded only if the tickets weren't dispatched") denies
nothing, and a compound subject ("a Ticket Protect premium isn't refunded") is stated only with its own
noun. A condition or a limit that comes first limits only its own clause ("if it's cheaper, we'll refund the
difference" states the refund), and where the reference limits nothing a condition after the thing is a
new exception ("SunTrail will waive it if you send a doctor's note" for "does not waive it"); "no card
fees" where cards are named elsewhere denies the card's fee; what the reference says is kept
("playlists are kept") said to be deleted; and what comes "at no extra cost" called a paid upgrade.
"Don't worry" and "no problem" deny nothing, and "cheques are fine" accepts them.
What it cannot see: a denial worded without a negation ("is excluded", "fails to"), or one stated back in
other words ("waived" for "charged even when", "the whole stay" for "the first night").
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from evals.metrics._facts import STOPWORDS
from evals.metrics._polarity import NEGATING, SENTENCE, zero_of
from evals.metrics._quantities import UNITS, quantities, quantities_in
from evals.metrics._text import BOUNDARY, clean, expand_contractions, match_tokens

# a sentence that limits or conditions what it says ("can only be returned if defective") claims little
_LIMITS = frozenset(["only", "unless", "except", "if", "when", "once"])
_ONLY = frozenset(["only", "unless", "except"])
_CONDITIONS = _LIMITS - {"only", "except"} | {"provid"}  # "provided", stemmed
_MONEY = frozenset(["usd", "eur", "gbp"])
# "free", "included" (in the price): no charge of its own; "waived" is often under a condition
_NO_CHARGE = frozenset(["free", "includ", "include"])
_WAIVING = frozenset(["waiv", "waive"])
_COPULA = frozenset(["is", "are", "be", "was", "were"])
_ELLIPTIC = frozenset([*_COPULA, "do", "does", "can", "will", "would", "has", "have"])
_MUST = frozenset(["must", "need", "requir", "necessary", "mandatory", "obligatory"])
_ASIDES = frozenset(["too", "also", "well", "even", "still", "just", "always", "either"])
_QUANTIFIERS = frozenset(["every", "everyone", "everybody", "each", "anyone", "anybody", "all"])
_BOUNDING = frozenset(["under", "below", "over", "above", "less", "more", "fewer", "least", "than"])
_AVOIDING = frozenset(["avoid", "off", "away", "instead", "rather", "clear"])
_RELATIVE = frozenset(["that", "which", "who"])
_PRONOUNS = frozenset(["it", "they", "this", "that", "these", "those"])
_LIGHT_VERBS = frozenset(["need", "have", "get", "able", "allowed", "possible", "usually", "always"])
_SCOPING = frozenset(["for", "on", "in", "to", "when", "if", "with", "during", "under", "over", "from"])
# words that follow "no" without naming the thing denied ("no need", "no problem")
_NOT_A_THING = frozenset(["need", "problem", "worry", "way", "matter", "doubt", "longer", "more", "less",
                          "one", "later", "sooner", "idea", "thank", "thanks"])  # fmt: skip


# "cheques are fine" accepts them: words that state an accepting predicate without its verb
_ACCEPTING = dict.fromkeys(["accept", "allow", "permitt"], frozenset(["fine", "ok", "okay", "welcome"]))


def denial_conflicts(question: str, reference: str, answer: str) -> list[str]:
    """Reasons the answer states what the reference denies, or denies what it states (empty: none)."""
    reasons = _denied_claims(question, reference, answer)
    reasons += _free_claims(question, reference, answer)
    reasons += _new_waivers(question, reference, answer)
    reasons += _lifted_requirements(reference, answer)
    reasons += _dropped_requirements(reference, answer)
    reasons += _denied_affirmations(reference, answer)
    reasons += _denied_attributes(reference, answer)
    reasons += _open_when_closed(reference, answer)
    reasons += _denied_values(reference, answer)
    reasons += _overridden_conditions(question, reference, answer)
    reasons += _priced_when_free(question, reference, answer)
    reasons += _discarded_keepings(reference, answer)
    reasons += _charged_when_included(reference, answer)
    return reasons


@dataclass(frozen=True)
class _Denial:
    """What a reference clause denies: "loss and theft are not covered" -> things {loss, theft}, predicate
    cover; "no cash compensation" -> things {cash}; "no compensation for weather delays" also needs one
    of its qualifier's words (weather, delays)."""

    things: frozenset[str]
    predicate: str
    qualifier: frozenset[str]
    of_predicate: bool = False
    every: bool = False  # all of ``things`` must be stated ("snow loads", not just "snow")
    head: str = ""  # the noun a compound subject names ("premium" of "Ticket Protect premium"), if stated
    bounded: bool = False  # denied below or above a value ("baskets under $35 can't be checked out")

    def stated_in(self, words: set[str], answer: set[str] | None = None) -> set[str]:
        """The words of an affirmative sentence that state what was denied (empty: it does not).

        With ``answer`` (all the answer's words), a predicate denial may find its subject there when
        the sentence names it by a pronoun ("it expires after 12 months").
        """
        said = words & self.things
        if self.every and said != self.things:
            return set()
        if not said and self.of_predicate and answer is not None and words & _PRONOUNS:
            said = answer & self.things
        verbs = {self.predicate} | _ACCEPTING.get(self.predicate, frozenset())
        if not said or (self.predicate and not words & verbs):
            return set()
        if self.head and self.head in self.things and self.head not in words:
            return set()  # "tickets are refunded" says nothing of the "Ticket Protect premium"
        if self.qualifier and not words & self.qualifier:
            return set()
        return said | ({self.predicate} if self.predicate else set())


def _denied_claims(question: str, reference: str, answer: str) -> list[str]:
    """Things the reference denies that an answer sentence without any negation or limit states."""
    clauses = _clauses(match_tokens(reference))
    stated = {word for clause in clauses if not NEGATING & set(clause) for word in clause}
    affirmed = stated | set(match_tokens(question))
    denying = [part for clause in clauses if NEGATING & set(clause) for part in _each_denial(clause)]
    denials = [_denial(clause, affirmed, stated) for clause in denying]
    denials += [_object_denial(clause, affirmed) for clause in denying]
    everything = set(match_tokens(answer)) | set(match_tokens(question))  # "do they expire?" "they do"
    # a reference that limits nothing denies without exception: "waived if ..." is a new exception
    limited = bool(_LIMITS & {word for clause in clauses for word in clause})
    previous: list[str] = []
    for sentence in SENTENCE.split(clean(answer)):
        whole = match_tokens(sentence)
        if whole and whole[-1] == BOUNDARY:
            whole = whole[:-1]
        ellipsis = bool(whole) and whole[-1] in _ELLIPTIC and not NEGATING & set(whole)
        before = previous if ellipsis else []
        reasons = _denied_in(denials, stated, everything, whole, before, limited) if whole else []
        previous = whole
        if reasons:
            return reasons
    return []


def _denied_in(
    denials: "list[_Denial | None]",
    stated: set[str],
    everything: set[str],
    whole: list[str],
    previous: list[str],
    limited: bool,
) -> list[str]:
    """What one answer sentence states that a denial denies, read from each of its clauses to its end: a
    condition that comes first ("if it's cheaper, we'll refund the difference") limits only itself."""
    starts = [0] + [i + 1 for i, word in enumerate(whole) if word == BOUNDARY]
    for start in starts:
        tokens = whole[start:]
        words = set(tokens)
        if previous:
            # "fences aren't covered, but gates are": the verb left out is the sentence before's
            words |= {w for w in previous if _is_content(w)}
        if not words or words & _ONLY:
            continue
        for denial in denials:
            if denial is None or words & _LIMITS and limited and not denial.of_predicate:
                continue
            if denial.every and words & _AVOIDING:  # "keep it off uneven ground" agrees
                continue
            if denial.bounded and any(word[0].isdigit() for word in tokens):
                continue  # "it needs at least $35 before you can check out" restates the limit
            # a condition does not soften a denied predicate ("it transfers if you sell it"), and only a
            # negation before the predicate denies it ("they expire after 2 years if you don't use them")
            said_before = tokens[: tokens.index(denial.predicate)] if denial.predicate in tokens else tokens
            if _negates(said_before if denial.of_predicate else whole):
                continue
            said = denial.stated_in(words, everything)
            if said:
                return [f"states '{', '.join(sorted(said))}', which the reference denies"]
            if _listed_among(denial, words, stated):
                return [f"lists '{' '.join(sorted(denial.things))}', which the reference denies"]
    return []


_REASSURING = frozenset(["worry", "worri", "problem", "fear"])  # "don't worry", "no problem" deny nothing


def _negates(words: list[str]) -> bool:
    """A negation ("not", "no", "zero faults") that does not reassure ("no worries")."""
    for index, word in enumerate(words):
        reassuring = index + 1 < len(words) and words[index + 1] in _REASSURING
        if word in NEGATING and not reassuring or zero_of(words, index):
            return True
    return False


def _listed_among(denial: "_Denial", words: set[str], stated: set[str]) -> bool:
    """A denied thing of two words or more ("mobile phone bills aren't accepted") named in a list of what
    the reference accepts ("a utility bill, bank statement or mobile phone bill"), with no verb needed."""
    if denial.of_predicate or len(denial.things) < 2 or not denial.things <= words:
        return False
    return len(words & stated - denial.things - STOPWORDS) >= 3


def _clauses(words: list[str]) -> list[list[str]]:
    clauses: list[list[str]] = [[]]
    for word in words:
        if word in {BOUNDARY, "but", "however", "although", "while", "except", "so", "because"}:
            clauses.append([])
        else:
            clauses[-1].append(word)
    return [clause for clause in clauses if clause]


def _each_denial(clause: list[str]) -> list[list[str]]:
    """ "no cancellation fee and no notice period", "never expire and have no fees": one part per denial
    joined by "and", "or"."""
    parts: list[list[str]] = [[]]
    for index, word in enumerate(clause):
        joined = {"and", "or", "nor"} & set(clause[max(0, index - 2) : index])
        if word in NEGATING and joined and NEGATING & set(parts[-1]):
            parts.append([])
        parts[-1].append(word)
    return parts


def _denial(clause: list[str], affirmed: set[str], stated: set[str]) -> _Denial | None:
    """Read one denying clause; None when what it denies is already said plainly elsewhere.

    ``affirmed``: the question's words and the reference's affirmative clauses; ``stated``: only the latter
    (asking "do they expire?" does not make expiring something the reference affirms).
    """
    at = next(i for i, word in enumerate(clause) if word in NEGATING)
    if _CONDITIONS & set(clause[:at]):
        return None  # "refunded only if the tickets weren't dispatched" sets a condition, it denies nothing
    rest = clause[at + 1 :]
    # "baskets under $35 can't ...": the denial holds below (or above) a value
    bounded = any(word in _BOUNDING and clause[i + 1][0].isdigit() for i, word in enumerate(clause[: at - 1]))
    before = [word for word in clause[:at] if _is_content(word)]
    qualifier: set[str] = set()
    noun = ""
    head: list[str] = []
    if clause[at] in {"none", "nothing"} and len(before) > 1 and not any(_is_content(w) for w in rest):
        # "Basic fares include none": the subject, and the verb before the denial
        things, predicate = set(before[-4:-1]), before[-1]
    elif clause[at] == "not":
        # "X are not covered": the subject's last words, and the verb after the negation
        subject: list[str] = []
        for word in reversed(clause[:at]):
            if word in {"that", "which", "who", "if", "when"} and subject:
                break
            if _is_content(word):
                subject.append(word)
        things = set(subject[:3])
        # "a Ticket Protect premium": one noun and its modifiers, no "and" or "or" between them
        compound = len(subject) > 1 and not {"and", "or", "nor"} & set(clause[:at])
        noun = subject[0] if compound else ""
        predicate = next((w for w in rest if _is_content(w) and w not in _LIGHT_VERBS), "")
    else:
        # "no cash compensation": the thing right after; "no compensation for delays": and what it is for
        head = [w for w in rest[:2] if _is_content(w) and w not in _NOT_A_THING]
        things, predicate = set(head[:1]), ""
        preposition = next((i for i, w in enumerate(rest) if w in _SCOPING), None)
        scope = [w for w in rest[preposition + 1 :] if _is_content(w)] if preposition is not None else []
        qualifier = set(scope[:1])
    if things - affirmed:
        return _Denial(
            frozenset(things - affirmed), predicate, frozenset(qualifier), bounded=bounded, head=noun
        )
    if clause[at] == "no" and len(head) == 2 and head[1] not in stated:
        # "no card fees" where cards are named elsewhere: the card and the fee, both
        return _Denial(frozenset(head), "", frozenset(qualifier), every=True, bounded=bounded)
    # "opened ones that are not defective": a relative clause restricts the subject, it claims nothing
    relative = _RELATIVE & set(clause[max(0, at - 2) : at])
    if things and predicate and predicate not in stated and not relative:
        # "store credit never expires", "the warranty is not transferable": the subject is said
        # elsewhere, what is denied is the predicate; the answer may name the subject by a pronoun
        return _Denial(frozenset(things), predicate, frozenset(), of_predicate=True, bounded=bounded)
    return None


def _object_denial(clause: list[str], affirmed: set[str]) -> _Denial | None:
    """What "is not designed for snow loads" denies: the object after the verb, when it is new and has two
    or more words ("rated for moderate snow loads" states it)."""
    at = next(i for i, word in enumerate(clause) if word in NEGATING)
    if clause[at] != "not":
        return None
    rest = clause[at + 1 :]
    scope = next((i for i, word in enumerate(rest[:4]) if word in _SCOPING), None)
    if scope is None or not any(_is_content(word) for word in rest[:scope]):
        return None
    phrase: list[str] = []
    for word in rest[scope + 1 :]:
        if not _is_content(word):
            if phrase:
                break
            continue
        phrase.append(word)
    obj = set(phrase[:3])
    if not obj or obj <= affirmed:
        return None
    if len(obj) == 1:
        # "it is not covered on Essential": one word is denied only with the verb ("covered on both
        # Essential and Complete")
        verb = next(word for word in rest[:scope] if _is_content(word))
        return _Denial(frozenset(obj), verb, frozenset(), every=True)
    return _Denial(frozenset(obj), "", frozenset(), every=True)


def _is_content(word: str) -> bool:
    return word.isalpha() and len(word) > 2 and word not in STOPWORDS and word not in NEGATING


def _free_claims(question: str, reference: str, answer: str) -> list[str]:
    """Something the reference prices and never calls free, nor £0 ("redelivery costs $5.99"), said to be free
    or included ("shipping included" where shipping is $6.99 on top).

    Only in a sentence that neither denies anything nor names a thing the reference and question do not
    ("Flex fares change for free" may be true of a fare the reference does not price).
    """
    known = set(match_tokens(reference))
    prices = [q for q in quantities(reference) if q.dimension in _MONEY]
    # "repairs have a £0 excess" calls repairs free in a number
    # "£295, including custom trays and gel" includes them in the price
    if known & (_NO_CHARGE | {"waiv", "including"}) or not prices or any(q.high == 0 for q in prices):
        return []
    named = known | set(match_tokens(question))
    for sentence in SENTENCE.split(clean(answer)):
        for clause in _clauses(match_tokens(sentence)):
            words = set(clause)
            if not words & _NO_CHARGE or words & NEGATING:
                continue
            # what a condition names ("free if you book before Thursday") is no other thing called free
            said = clause[: next((i for i, w in enumerate(clause) if w in _CONDITIONS), len(clause))]
            content = {w for w in said if _is_content(w) and w not in UNITS}
            if not content - named - _LIMITS - _ASIDES - _NO_CHARGE:
                return [f"calls '{' '.join(clause)}' free where the reference prices it"]
    return []


def _new_waivers(question: str, reference: str, answer: str) -> list[str]:
    """A charge or a period the reference sets without any exception ("$89 flat", "a 14-day waiting
    period") said to be waived in a sentence that names something the reference and question do not
    ("waived if you also book installation", "waived if your pet had a vet check-up")."""
    known = set(match_tokens(reference))
    if set(match_tokens(question)) & _WAIVING:
        return []  # "can the fee ever be waived?": the answer's waiver is what was asked about
    prices = [q for q in quantities(reference) if q.unit in _VALUED and q.high > 0]
    # an exception the reference makes ("unless defective", "that are not defective") may be the waiver
    # in other words; "non-sterling" names a kind of fee, it makes no exception
    excepting = set(match_tokens(re.sub(r"(?i)\bnon-", "", reference))) & (NEGATING | {"unless", "except"})
    if not prices or excepting or known & _WAIVING:
        return []
    named = known | set(match_tokens(question))
    for sentence in SENTENCE.split(clean(answer)):
        words = set(match_tokens(sentence))
        if not any(w.startswith("waiv") for w in words) or words & NEGATING:
            continue
        new = {w for w in words if _is_content(w) and not w.startswith("waiv")} - named - _ASIDES - _LIMITS
        new -= _QUANTIFIERS  # "one waiver every 12 months", "everyone gets one": who and how often
        if new:
            return [f"waives it when {', '.join(sorted(new))}, which the reference does not say"]
    return []


def _lifted_requirements(reference: str, answer: str) -> list[str]:
    """What the reference says is not required ("does not have to be the account holder") said to be."""
    lifted = [_required(clause) for clause in _clauses(match_tokens(reference)) if NEGATING & set(clause)]
    for sentence in SENTENCE.split(clean(answer)):
        tokens = match_tokens(sentence)
        words = set(tokens)
        if words & NEGATING or not _obliges(tokens):
            continue
        for thing in lifted:
            if thing and thing <= words:
                return [f"requires '{' '.join(sorted(thing))}', which the reference says is not required"]
    return []


def _obliges(tokens: Sequence[str]) -> bool:
    return bool(_MUST & set(tokens)) or any(a in {"have", "has"} and b == "to" for a, b in pairwise(tokens))


def _required(clause: list[str]) -> frozenset[str]:
    """The thing a denying clause says is not required: what follows "not have to" or "not need"."""
    at = next(i for i, word in enumerate(clause) if word in NEGATING)
    rest = clause[at + 1 :]
    if not _obliges(rest[:2]):
        return frozenset()
    thing: list[str] = []
    for word in rest[1:]:
        if word == BOUNDARY:
            break
        if _is_content(word) and word not in _MUST:
            thing.append(word)
    return frozenset(thing[:3]) if len(thing) > 1 else frozenset()


# "give us the receipt", "return the form": an instruction opens with a verb and its object
_OBJECT_OPENERS = frozenset(["us", "the", "your", "a", "an", "any", "it", "them", "all", "every", "me"])
_UNNEEDED = re.compile(r"\b(?:not (?:need|have to|requir|necessary)|no need|can skip)\b")


def _dropped_requirements(reference: str, answer: str) -> list[str]:
    """What the reference asks for ("give us the crime reference number", "you must show photo ID")
    said not to be needed ("you don't need a crime reference number")."""
    asked: list[set[str]] = []
    for part in re.split(r"\band\b", " ".join(match_tokens(reference))):
        for clause in _clauses(part.split()):
            # "if you need help, call us" supposes a need; it asks for nothing
            if NEGATING & set(clause) or len(clause) < 3 or {"if", "unless"} & set(clause):
                continue
            instructs = _is_content(clause[0]) and clause[1] in _OBJECT_OPENERS
            if instructs or _obliges(clause):
                asked.append({w for w in clause if _is_content(w) and w not in _MUST})
    # "adult members don't have to be your children; only under-18s must be": the reference waives it too
    waived = {word for named in _unneeded(reference) for word in named}
    for named in _unneeded(answer):
        if any(set(named) <= words for words in asked) and not set(named) <= waived:
            return [f"says '{' '.join(named)}' is not needed, which the reference asks for"]
    return []


def _unneeded(text: str) -> list[list[str]]:
    """What each clause of ``text`` says is not needed ("you don't need a crime reference number")."""
    said = []
    for clause in _clauses(match_tokens(text)):
        found = _UNNEEDED.search(" ".join(clause))
        if found is None or _ONLY & set(clause):
            continue
        after = " ".join(clause)[found.end() :].split()
        thing = {w for w in after[:6] if _is_content(w) and w not in _MUST | _LIGHT_VERBS}
        named = list(dict.fromkeys(w for w in after if w in thing))[:3]
        if named:
            said.append(named)
    return said


def _denied_affirmations(reference: str, answer: str) -> list[str]:
    """What the reference says a subject does ("resetting your password unlocks it") denied of it."""
    clauses = _clauses(match_tokens(reference))
    affirming = [set(clause) for clause in clauses if not NEGATING & set(clause)]
    denied = {word for clause in clauses if NEGATING & set(clause) for word in clause}
    # "packs can't be bought while your plan is paused" denies it only for a while
    for clause in [
        c for part in _parts(match_tokens(answer)) if not _WHILE & set(part) for c in _clauses(part)
    ]:
        if "not" not in clause or set(clause) & _LIMITS:
            continue
        at = clause.index("not")
        subject = {word for word in clause[:at] if _is_content(word) and not word.endswith("ly")}
        predicate = next((w for w in clause[at + 1 :] if _is_content(w) and w not in _LIGHT_VERBS), "")
        if not subject or not predicate or predicate in denied:
            continue
        # "it doesn't block direct debits" speaks of something the reference does not name
        said = clause[clause.index(predicate) + 1 :]
        objects = {word for word in said if _is_content(word) and not word.endswith("ly")}
        if any(predicate in words and subject | objects <= words for words in affirming):
            return [f"denies '{' '.join(sorted(subject))} {predicate}', which the reference affirms"]
    return []


def _denied_attributes(reference: str, answer: str) -> list[str]:
    """What the reference says the thing is not ("It is not dishwasher-safe", "splash resistant, not
    waterproof") said of it ("it's dishwasher-safe as well"), after "is" or "are" in a clause that
    denies nothing."""
    words = match_tokens(reference)
    clauses = _clauses(words)
    stated = {word for clause in clauses if not NEGATING & set(clause) for word in clause}
    denied = []
    for clause in clauses:
        if "not" in clause and not any(_is_content(w) for w in clause[: clause.index("not")]):
            phrase = [w for w in clause[clause.index("not") + 1 :][:2] if _is_content(w)]
            if phrase and phrase[0] not in _LIGHT_VERBS and not set(phrase) <= stated:
                denied.append(phrase)
    for clause in _parts(match_tokens(answer)):
        if NEGATING & set(clause):
            continue
        for phrase in denied:
            at = next((i for i in range(len(clause)) if clause[i : i + len(phrase)] == phrase), None)
            if at is not None and _COPULA & set(clause[max(0, at - 2) : at]):
                return [f"says it is '{' '.join(phrase)}', which the reference denies"]
    return []


def _parts(words: list[str]) -> list[list[str]]:
    """Word runs between punctuation."""
    parts: list[list[str]] = [[]]
    for word in words:
        if word == BOUNDARY:
            parts.append([])
        else:
            parts[-1].append(word)
    return [part for part in parts if part]


_WHILE = frozenset(["while", "whilst", "during"])
_CLOSED = frozenset(["clos", "close"])  # "closed", "closes"
_CLOCK = re.compile(r"\d{1,2}:\d{2}")


def _open_when_closed(reference: str, answer: str) -> list[str]:
    """Open when the reference says closed ("closed Sunday" / "also open Sundays 10-4"; hours for the day,
    "Saturday and Sunday 9am-5pm", say it is open too)."""
    closed: list[set[str]] = []
    for clause in _parts(match_tokens(reference)):
        shut = next((i for i, word in enumerate(clause) if word in _CLOSED), None)
        if shut is not None:  # "closed Sunday and on public holidays": each of them
            after = " ".join(clause[shut + 1 :])
            for part in re.split(r"\b(?:and|or)\b", after):
                named = {w for w in part.split() if _is_content(w)}
                closed += [named] if named else []
    for clause in _parts(match_tokens(answer)):
        words = set(clause)
        if _CLOSED & words or NEGATING & words:
            continue
        for when in closed:
            if when <= words and ("open" in words or _hours_for(clause, when)):
                return [f"says it is open {' '.join(sorted(when))}, which the reference says is closed"]
    return []


def _hours_for(clause: list[str], days: set[str]) -> bool:
    """A clock time right after one of ``days`` ("Sunday 9am-5pm"; not "on Sundays you can call 8-8")."""
    return any(
        word in days and any(_CLOCK.fullmatch(w) for w in clause[index + 1 : index + 3])
        for index, word in enumerate(clause)
    )


_VALUED = _MONEY | {"percent", "day", "week", "month", "year"}  # units that give a thing a value


def _denied_values(reference: str, answer: str) -> list[str]:
    """A thing the reference gives a value ("a minimum 10% deposit", "a 1-year warranty") said not to exist
    ("no deposit needed", "they don't come with any warranty"), in a clause without a condition or bound."""
    valued: set[str] = set()
    unsure: set[str] = set()  # "a 10% restocking fee applies only if unboxed", "£0 excess": may be none
    for sentence in SENTENCE.split(clean(reference)):
        words = match_tokens(sentence)
        for q in quantities_in(words):
            named = words[q.position + 2] if q.position + 2 < len(words) else ""
            if q.unit in _VALUED and _is_content(named) and named not in UNITS:
                conditional = q.high == 0 or (NEGATING | _LIMITS | _WAIVING) & set(words)
                (unsure if conditional else valued).add(named)
    valued -= unsure
    known = set(match_tokens(reference))
    for clause in _clauses(match_tokens(answer)):
        if _new_condition(clause, known) or _BOUNDING & set(clause) or any(w[0].isdigit() for w in clause):
            continue
        for at, word in enumerate(clause):
            if word not in NEGATING:
                continue
            denied = [w for w in clause[at + 1 : at + 5] if w in valued]
            if denied:
                return [f"says there is no {denied[0]}, which the reference gives a value"]
    return []


def _new_condition(clause: list[str], known: set[str]) -> bool:
    """A limit in the clause that names something the reference does not ("no deposit if you pay in
    full"); "no excess to pay when you claim" names only the claim the reference charges it for."""
    limits = [at for at, word in enumerate(clause) if word in _LIMITS]
    return any({w for w in clause[at + 1 :] if _is_content(w)} - known for at in limits)


_KEEP = re.compile(
    r"\b(?:keep|retain|hold on to|hang on to|save) (?:the |your |all |any |hold of )?((?:[a-z]+ ){0,2}[a-z]+)"
)
# "playlists and saved music are kept": what the reference keeps for the customer
_KEPT = re.compile(
    r"((?:[a-z]+ ){0,2}[a-z]+) (?:is|are|will be|stays?|remains?) (?:kept|retained|preserved|saved)\b"
)
_KEPT_UNTIL = re.compile(r"\b(?:until|till|while|for|after|before|when|if|so)\b")
_DISCARD = re.compile(
    r"\b(?:throw|toss|chuck|bin)\b(?: [a-z]+){0,3} (?:away|out)\b"
    r"|\b(?:discard|dispose of|get rid of|bin|recycle)\b"
    r"|\b(?:is|are|be|get|gets|got) (?:permanently )?(?:deleted|erased|wiped|removed)\b"
)


def _discarded_keepings(reference: str, answer: str) -> list[str]:
    """What the reference says to keep ("keep the packaging until it's resolved") said to be thrown away
    ("you can throw the packaging away"), in a clause that names it."""
    plain_reference = expand_contractions(reference)
    found = [*_KEEP.finditer(plain_reference), *_KEPT.finditer(plain_reference)]
    # each thing kept, all its words ("saved music" is not "downloaded music")
    kept = [
        item
        for keeping in found
        for part in re.split(r"\band\b|\bor\b", re.split(_KEPT_UNTIL, keeping.group(1))[0])
        if (item := frozenset(word for word in match_tokens(part) if _is_content(word)))
    ]
    for sentence in SENTENCE.split(clean(answer)):
        plain = expand_contractions(sentence)
        if NEGATING & set(match_tokens(plain)) or not _DISCARD.search(plain):
            continue
        named = set().union(*(item for item in kept if item <= set(match_tokens(plain))))
        if named:
            return [f"says to discard the {', '.join(sorted(named))}, which the reference says to keep"]
    return []


_SCOPED_FREE = frozenset(["over", "above", "under", "first", "up", "until", "within"])
_SAVING = frozenset(["free", "save", "saving", "sav"])


def _priced_when_free(question: str, reference: str, answer: str) -> list[str]:
    """What the reference gives free without a condition ("exchange it with free collection and delivery")
    given a price in the answer ("exchanges cost £50"). Only words of the free sentence that no priced
    sentence of the reference names ("refunded minus a £50 collection charge" prices collection) count."""
    free: set[str] = set()
    priced: set[str] = set(match_tokens(question))
    for sentence in SENTENCE.split(clean(reference)):
        said = match_tokens(sentence)
        if _charges(said):
            priced |= set(said)
        elif "free" in said and not (_LIMITS | NEGATING | _SCOPED_FREE) & set(said):
            # "paying for 10 months and getting 12 (two months free)": the months are free, not the billing
            free |= {
                w for c in _clauses(said) if "free" in c for w in c if _is_content(w) and w not in _NO_CHARGE
            }
    for sentence in SENTENCE.split(clean(answer)):
        for clause in _clauses(match_tokens(sentence)):
            words = set(clause)
            # "you save €178 — effectively two months free" says again what is free
            if words & (NEGATING | _LIMITS | _SAVING) or not _charges(clause):
                continue
            named = words & free - priced
            if named:
                return [f"prices '{', '.join(sorted(named))}', which the reference gives free"]
    return []


def _charges(words: list[str]) -> bool:
    """Tokens that give a sum of money above zero."""
    return any(q.dimension in _MONEY and q.high > 0 for q in quantities_in(words))


_EVEN = re.compile(r"\beven (?:if|when|though)\b")


def _overridden_conditions(question: str, reference: str, answer: str) -> list[str]:
    """A condition the reference sets ("returnable only if faulty", "unless it is faulty") said not to
    matter ("non-returnable, even if they arrive faulty")."""
    plain = " ".join(match_tokens(reference))
    if _EVEN.search(plain) or re.search(r"\b(?:regardless|no matter)\b", plain):
        return []
    asked = set(match_tokens(question))
    conditions: set[str] = set()
    for clause in _clauses(match_tokens(reference)):
        for at, word in enumerate(clause):
            if word in _CONDITIONS:
                conditions |= {w for w in clause[at + 1 : at + 6] if _is_content(w)} - asked
    said = " ".join(match_tokens(answer))
    for found in _EVEN.finditer(said):
        after = said[found.end() :].split(BOUNDARY)[0].split()
        overridden = {w for w in after[:5] if _is_content(w)} & conditions
        if overridden:
            return [f"says it holds even if {', '.join(sorted(overridden))}, a condition the reference sets"]
    return []


_INCLUDES = frozenset(["includ", "include", "including"])
_NO_EXTRA = re.compile(r"\b(?:at )?no (?:extra|additional) (?:cost|charge|fee)\b")
_ON_TOP = re.compile(
    r"\b(?:charged|paid|billed|costs?) (?:separately|extra|on top)\b|\bon top\b"
    r"|\bpa(?:y|id) (?:upgrade|add on|addon|extra)\b"  # "a paid upgrade", as tokens
    r"|\bat (?:an )?(?:extra|additional) (?:cost|charge)\b|\b(?:extra|additional) charge\b"
)


def _charged_when_included(reference: str, answer: str) -> list[str]:
    """What the reference includes ("the exam includes 2 X-rays") said to be charged on top ("X-rays are
    charged separately"), in an answer clause that denies nothing."""
    included: set[str] = set()
    for clause in _clauses(match_tokens(reference)):
        at = next((i for i, word in enumerate(clause) if word in _INCLUDES), None)
        if at is not None and not NEGATING & set(clause):
            included |= {w for w in clause[at + 1 : at + 6] if _is_content(w) and w not in UNITS}
    for sentence in SENTENCE.split(clean(reference)):
        if _NO_EXTRA.search(sentence.lower()):  # "plus Lossless at no extra cost"
            included |= {w for w in match_tokens(sentence) if _is_content(w) and w not in UNITS}
    for clause in _clauses(match_tokens(answer)):
        named = set(clause) & included
        if named and not NEGATING & set(clause) and _ON_TOP.search(" ".join(clause)):
            return [f"charges on top for '{' '.join(sorted(named))}', which the reference includes"]
    return []
