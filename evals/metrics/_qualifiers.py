"""What a quantity is counted per, and the time zone of a clock time, read from the words after it.

"$19.95 per order" is not "$19.95 per item", and "2 pm Pacific" is not "2 pm Eastern": the value
agrees with the reference, the thing it is per or the zone it is in does not. Only qualifiers both
texts state are compared; an answer that leaves one out does not conflict. A thing named two ways
("per $1" and "per dollar", "per lb" and "per pound", "per passenger" and "per person", "each way"
and "per direction", "per booking" and "per order") is one thing; "in total" is per order, so not per
person; every thing named after a value counts ("each way per traveller"), and the thing the
reference prices ("box shipping is $6.99 per week") may be what the answer counts per. "Each time"
is per whatever event the reference counts ("£1.50 each time" for "per ATM withdrawal"), but not per
hour, day, week, month or year. A possessive names what is counted: "10% of each ticket's face value"
is per ticket.
"""

from collections.abc import Sequence

from evals.metrics._facts import STOPWORDS
from evals.metrics._quantities import Quantity
from evals.metrics._text import BOUNDARY

_ZONES = {
    **dict.fromkeys(["pacific", "pt", "pst", "pdt"], "pacific"),
    **dict.fromkeys(["mountain", "mt", "mst", "mdt"], "mountain"),
    **dict.fromkeys(["central", "ct", "cst", "cdt"], "central"),
    **dict.fromkeys(["eastern", "et", "est", "edt"], "eastern"),
    **dict.fromkeys(["utc", "gmt"], "utc"),
    **dict.fromkeys(["cet", "cest"], "central european"),
}
_PER = {"per", "each", "every"}
# one thing named two ways: "per $1" (normalised "per 1 usd") is "per dollar", "per lb" is "per pound"
_SAME = {
    **dict.fromkeys(["dollar", "dollars", "buck", "bucks"], "usd"),
    **dict.fromkeys(["euro", "euros"], "eur"),
    **dict.fromkeys(["pound", "pounds", "lbs"], "lb"),
    **dict.fromkeys(["kilo", "kilos", "kilogram", "kilograms"], "kg"),
    # one person named as the shop's kind of customer: "per passenger" is "per person", "per guest"
    **dict.fromkeys(["person", "people", "passenger", "traveller", "traveler", "guest", "head", "adult",
                     "individual", "customer", "member", "attendee", "participant", "pax"], "person"),
    **dict.fromkeys(["way", "direction", "leg"], "direction"),  # "each way" is "per direction"
    **dict.fromkeys(["additional", "extra", "another", "further"], "additional"),  # "every extra pet"
    **dict.fromkeys(["order", "booking", "purchase", "reservation", "basket", "cart", "total"], "order"),
}  # fmt: skip
_OCCASIONS = frozenset(["time", "times", "occasion", "occasions"])
_PERIODS = frozenset(["hour", "day", "week", "month", "year", "night"])
_TOTAL = frozenset(["total", "altogether", "combined", "overall"])
_REACH = 6  # words after the quantity that may still qualify it


def qualifier_conflicts(
    stated: Quantity, words: Sequence[str], known: Sequence[tuple[Quantity, Sequence[str]]]
) -> list[str]:
    """A value that agrees with the reference but per another thing or in another time zone."""
    mine_per, mine_zone = _qualifiers(words, stated)
    for quantity, source in known:
        theirs_per, theirs_zone = _qualifiers(source, quantity)
        if mine_zone and theirs_zone and mine_zone != theirs_zone:
            return [f"gives the time in {mine_zone} time where the reference says {theirs_zone}"]
        # "box shipping is $6.99 per week": the box the reference prices is what "per box" names
        theirs_all = _canonical(theirs_per | _named_before(source, quantity))
        if _per_occasion(mine_per) and not _PERIODS & theirs_all:
            continue  # "£1.50 each time" is per withdrawal, per use or per visit, not per month
        if mine_per and theirs_per and not _canonical(mine_per) & theirs_all:
            said, meant = sorted(mine_per)[0], sorted(theirs_per)[0]
            return [f"counts it per {said} where the reference counts per {meant}"]
    return []


def _qualifiers(words: Sequence[str], quantity: Quantity) -> tuple[set[str], str | None]:
    """The nouns a quantity is per ("per item in your cart" -> {item, cart}) and its time zone."""
    after: list[str] = []
    following = words[quantity.position + 1 : quantity.position + 2 + _REACH]
    for index, word in enumerate(following):
        # "£60 per claim (per fault)": a qualifier said again in other words is the same value's
        if word == BOUNDARY and following[index + 1 : index + 2] != ["per"]:
            break
        after.append(word)
    zone = None
    if quantity.dimension == "clock":
        zone = next((_ZONES[word] for word in after[:2] if word in _ZONES), None)
    # "per order", "each", "every"; "a" only right after the unit ("$5 a month")
    markers = [i for i, word in enumerate(after) if word in _PER or word == "a" and i <= 1]
    nouns: set[str] = set()
    for per in markers:  # "each way per traveller": per direction and per person
        nouns |= _named(after[per + 1 :])
    if _TOTAL & set(after[:3]):
        nouns.add("total")  # "€90 total", "in total": for the whole order, not per person or item
    return nouns, zone


def _per_occasion(nouns: set[str]) -> bool:
    """ "each time", "every time": once per whatever event the value is charged for, not per period."""
    return bool(nouns) and nouns <= _OCCASIONS


def _canonical(words: set[str]) -> set[str]:
    return {_SAME.get(word, word) for word in words}


def _named_before(words: Sequence[str], quantity: Quantity) -> set[str]:
    """The words of the quantity's own clause before it ("box shipping is ...")."""
    before: set[str] = set()
    for word in reversed(words[max(0, quantity.position - _REACH) : quantity.position]):
        if word == BOUNDARY:
            break
        before.add(word)
    return before - STOPWORDS


def _named(words: Sequence[str]) -> set[str]:
    """The run of words naming the thing: "per freight item", "per item in your cart"."""
    nouns: set[str] = set()
    for word in words:
        if word in _PER:
            break
        if word.endswith("'s") and word[:-2].isalpha() and not nouns:
            return {word[:-2]}  # "each ticket's face value" is per ticket
        if not word.isalpha() or word in STOPWORDS:
            if nouns:
                break
            continue
        nouns.add(word)
    return nouns
