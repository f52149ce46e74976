"""Quantities in normalised text: a number or range with its unit, comparable across units.

"2 week" equals "14 day", "1.5 year" equals "18 month", "150 kg" equals "330 lb" (to 1%); "5-7
business day" equals "5-7 day". Months and days are never converted: "a month" is not "30 days".
Days are calendar days when "calendar" follows, also said again ("about 7 days, calendar days"); a
range's ends count alone ("100-5000" is no seven-digit identifier). A unit is found past one or two
modifiers and a bound ("9 or more claim-free years" counts years), and a bare number joined by "and" or
"or" to the next one shares its unit ("18+ and 21+ events", "3 or 4 days")."""

import re
from dataclasses import dataclass, replace

from evals.metrics._text import normalise, stem, tokens

# unit -> (dimension, factor to the dimension's base unit)
UNITS: dict[str, tuple[str, float]] = {
    "second": ("time", 1 / 3600),
    "minute": ("time", 1 / 60),
    "hour": ("time", 1.0),
    "day": ("time", 24.0),
    "week": ("time", 168.0),
    "month": ("calendar", 1.0),
    "year": ("calendar", 12.0),
    "usd": ("usd", 1.0),
    "eur": ("eur", 1.0),
    "gbp": ("gbp", 1.0),
    "percent": ("percent", 1.0),
    "lb": ("mass", 0.45359237),
    "kg": ("mass", 1.0),
    "g": ("mass", 0.001),
    "liter": ("volume", 1.0),
    "ml": ("volume", 0.001),
    "mg": ("mass", 1e-6),
    "wh": ("energy", 1.0),
    "w": ("power", 1.0),
    "mah": ("charge", 1.0),
    "kwh": ("energy", 1000.0),
    "kw": ("power", 1000.0),
    "lumen": ("light", 1.0),
    "point": ("points", 1.0),
    "cm": ("length", 1.0),
    "mm": ("length", 0.1),
    "meter": ("length", 100.0),
    "km": ("length", 100_000.0),
    "inch": ("length", 2.54),
    "foot": ("length", 30.48),
    "mile": ("length", 160_934.4),
    "celsius": ("temperature", 1.0),
    "fahrenheit": ("temperature", 5 / 9),
    "degree": ("degree", 1.0),  # an angle or a temperature: compared only with plain degrees
}
_CONVERTED = {"mass", "length", "temperature"}  # rounded conversions: compare to 1.5%
_NUMBER = re.compile(r"^(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?$")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")
_MONEY = frozenset(["usd", "eur", "gbp"])
_VAGUE = {"few", "several", "some", "many", "couple"}
_NOT_UNITS = {
    "and", "or", "to", "of", "the", "a", "an", "in", "on", "at", "for", "per", "with", "from", "by", "is",
    "are", "was", "it", "you", "we", "if", "but", "so", "than", "more", "less", "up", "out", "off", "after",
    "before", "within", "over", "under", "about", "around", "then", "also", "x", "minus",
}  # fmt: skip


@dataclass(frozen=True)
class Quantity:
    """One number or range in a text, with its unit (a count's unit is the noun after the number)."""

    low: float
    high: float
    unit: str
    dimension: str
    position: int
    business: bool = False
    calendar: bool = False

    def base(self) -> tuple[float, float]:
        """Low and high in the dimension's base unit."""
        factor = UNITS[self.unit][1] if self.unit in UNITS else 1.0
        offset = 32.0 if self.unit == "fahrenheit" else 0.0
        return (self.low - offset) * factor, (self.high - offset) * factor

    def same_value(self, other: "Quantity") -> bool:
        """Same dimension and the same value or range (after unit conversion)."""
        if self.dimension != other.dimension:
            return False
        if self.dimension == "count" and self.unit != other.unit:
            return False
        tolerance = 0.015 if self.dimension in _CONVERTED else 1e-6
        return all(_close(a, b, tolerance) for a, b in zip(self.base(), other.base(), strict=True))

    def scale_ratio(self, other: "Quantity") -> float:
        """How many times larger the bigger of the two is (1.0 = same magnitude)."""
        if self.dimension == "temperature":
            return 1.0  # below zero and above it are still the same scale
        mine, theirs = max(self.base()[1], 1e-9), max(other.base()[1], 1e-9)
        return max(mine, theirs) / min(mine, theirs)


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1e-9)


def quantities(text: str) -> list[Quantity]:
    """Every quantity in ``text`` (raw text; it is normalised first), in reading order."""
    return quantities_in(tokens(normalise(text)))


def quantities_in(words: list[str]) -> list[Quantity]:
    """Every quantity in a list of normalised tokens; ``position`` is the number's token index."""
    found = []
    for index, word in enumerate(words):
        clock = _CLOCK.match(word)
        if clock:
            minutes = int(clock.group(1)) * 60 + int(clock.group(2))
            found.append(Quantity(minutes, minutes, "clock", "clock", index))
            continue
        number = _NUMBER.match(word)
        if not number or _looks_like_an_identifier(word, words, index):
            continue
        unit, business = _unit_after(words, index)
        # "minus 7 °C" is below zero; "a refund minus £25" takes a sum off, no price is negative
        sign = -1.0 if index and words[index - 1] == "minus" and unit not in _MONEY else 1.0
        low = sign * float(number.group(1))
        high = sign * float(number.group(2)) if number.group(2) else low
        dimension = UNITS[unit][0] if unit in UNITS else ("count" if unit else "number")
        calendar = _calendar_after(words, index)
        before = found[-1] if found else None
        if not unit and before is not None and _elided(before, words, index):
            # "12 hours on high, 48 on low": the unit said once holds for the next number
            unit, dimension = before.unit, before.dimension
            business, calendar = before.business, before.calendar
        found.append(Quantity(low, high, unit, dimension, index, business, calendar))
    return _shared_units(found, words)


def _shared_units(found: list[Quantity], words: list[str]) -> list[Quantity]:
    """ "18+ and 21+ events", "3 or 4 days": a bare number joined to the next one takes its unit."""
    shared = list(found)
    for at in range(len(shared) - 2, -1, -1):
        bare, unitted = shared[at], shared[at + 1]
        joined = unitted.position == bare.position + 2 and words[bare.position + 1] in {"and", "or"}
        if bare.dimension == "number" and unitted.unit and joined:
            shared[at] = replace(
                bare, unit=unitted.unit, dimension=unitted.dimension, business=unitted.business,
                calendar=unitted.calendar,
            )  # fmt: skip
    return shared


def _calendar_after(words: list[str], index: int) -> bool:
    """ "7 calendar days", or the kind of day said again right after: "about 7 days — calendar days"."""
    after = words[index + 1 : index + 5]
    return after[:1] == ["calendar"] or after[:1] == ["day"] and after[1:4] == ["|", "calendar", "day"]


def _elided(before: Quantity, words: list[str], index: int) -> bool:
    """The number at ``index`` shares the unit of ``before``: close after it, in the same sentence."""
    if before.dimension in {"count", "number", "clock"} or index - before.position > 6:
        return False
    following = words[index + 1] if index + 1 < len(words) else ""
    # "£26.80 for Band 1": a number right after a name labels the thing, it is no second price
    if index and words[index - 1].isalpha() and words[index - 1] not in _NOT_UNITS:
        return False
    # "one of our depots" counts depots, it is no distance
    return following in (_NOT_UNITS - {"of"}) | {"|", ""} and "." not in words[before.position : index]


def _unit_after(words: list[str], index: int) -> tuple[str, bool]:
    start = index + 1
    if words[start : start + 2] in (["or", "more"], ["or", "fewer"], ["or", "less"], ["or", "over"]):
        start += 2  # the bound belongs to the number: "9 or more claim-free years" counts years
    following = words[start] if start < len(words) else ""
    if following == "business" and start + 1 < len(words) and words[start + 1] == "day":
        return "day", True
    # the unit, or one or two modifiers before it: "250 bonus points", "5 claim-free years"
    for reach in (0, 1, 2):
        modifiers = words[start : start + reach]
        unit = stem(words[start + reach]) if start + reach < len(words) else ""
        if unit in UNITS and all(w.isalpha() and w not in _NOT_UNITS for w in modifiers):
            return unit, False
    if following.isalpha() and following not in _NOT_UNITS and following not in _VAGUE:
        return stem(following), False
    return "", False


def _looks_like_an_identifier(word: str, words: list[str], index: int) -> bool:
    """Phone numbers, order numbers and years are not quantities a fact is about."""
    # each end of a range counts alone: "100-5000" is a range of pounds, not a phone number
    digits = max(sum(char.isdigit() for char in part) for part in word.split("-"))
    previous = words[index - 1] if index else ""
    return digits >= 7 or word.count("-") > 1 or previous in {"tier", "zone", "step", "#", "no"}
