"""Prices: a sum of money the answer gives that the reference never gives nor implies.

An answer that states the price asked for and then another one ("£12 a month, but it goes up to £15
after the first year"; "£350, unless ..., in which case the standard £100 applies") names a charge for
a slot the reference does not price. A sum counts as given when it is one of the reference's,
question's or facts' sums in the same currency, or follows from them by simple arithmetic: two of
them added or subtracted (£250 + £200 = "£450 in total"), one times a number they give or a small
count (€90 per passenger, "€180 for the two of you"; £6 a day, "£42 a week"), or a percentage they
give of one ("10% of £799, so £719.10 back"). Only currencies the reference or question prices in
are read. Where they price nothing at all, one sum the answer gives is a charge the reference does not
make ("full refund, minus a €25 service fee"; "but the £1.50 per withdrawal still applies"); two or
more are read as a worked example ("£210 becomes £231"). What it cannot see: a wrong sum that happens
to be one of these results, a new charge in another currency, or a worked example that is wrong.

A charge named without a sum counts too: a fee, surcharge or penalty the reference and question never
mention ("though there's a small fee while it's paused" for a free pause; "refunded minus a restocking
fee"), in a sentence that gives no sum of money (the sums are read above) and neither denies it ("no fee",
"without any fee") nor waives it. It cannot see a charge worded without one of those nouns ("you pay a bit
extra").
"""

from collections.abc import Iterable, Sequence
from itertools import product

from evals.metrics._facts import alternatives
from evals.metrics._polarity import NEGATING, SENTENCE
from evals.metrics._quantities import Quantity, quantities
from evals.metrics._text import clean, match_tokens
from evals.sets.format import Fact

_MONEY = frozenset(["usd", "eur", "gbp"])
# counts that multiply a price without being written as figures: "a week" of a daily price, "a year"
_SMALL_COUNTS = (2.0, 3.0, 4.0, 7.0, 12.0, 52.0)
_CENT = 0.011
_CHARGES = frozenset(["fee", "surcharge", "penalty"])  # nouns that name a charge (match tokens)
_NOT_CHARGED = frozenset([*NEGATING, "waiv", "free", "never", "zero"])


def new_charges(question: str, reference: str, answer: str) -> list[str]:
    """Charges the answer names ("a small fee") where the reference and question name none."""
    known = [*match_tokens(reference), *match_tokens(question)]
    if _CHARGES & set(known):
        return []
    named = []
    for sentence in SENTENCE.split(clean(answer)):
        words = match_tokens(sentence)
        # "the full lesson fee" is what the reference charges "in full", no fee of the answer's own
        charges = [w for i, w in enumerate(words) if w in _CHARGES and not _in_full(words[:i], known)]
        # "the £3 Next Day fee" names the reference's own price (new_prices reads the sums)
        priced = any(q.unit in _MONEY for q in quantities(sentence))
        if charges and not priced and not set(words) & _NOT_CHARGED:
            named.append(f"names a {charges[0]} the reference does not charge")
    return named


def _in_full(before: Sequence[str], known: Sequence[str]) -> bool:
    """A charge named as the whole price ("the full lesson fee") where the reference charges in full."""
    return "full" in before[-3:] and "full" in known


def new_prices(question: str, reference: str, facts: Sequence[Fact], answer: str) -> list[str]:
    """The answer's sums of money (in a currency the reference or question prices in) that neither
    of them nor the facts give or imply by simple arithmetic, as "15 gbp"; where they price nothing,
    the answer's one sum."""
    known = quantities(reference) + quantities(question)
    known += [q for fact in facts for text in alternatives(fact) for q in quantities(text)]
    currencies = {q.unit for q in known if q.unit in _MONEY}
    if not currencies:
        # the reference makes no charge: one sum is a charge of the answer's own, several an example
        sums = list(dict.fromkeys(f"{q.low:g} {q.unit}" for q in quantities(answer) if q.unit in _MONEY))
        return sums if len(sums) == 1 else []
    # "£10 per month left, so with 8 months left you'd pay £80": the answer's own counts multiply too
    counted = [*known, *quantities(answer)]
    counts = [*_values(q for q in counted if q.unit not in _MONEY), *_SMALL_COUNTS]
    new = []
    for currency in sorted(currencies):
        implied = _implied(list(_values(q for q in known if q.unit == currency)), counts)
        for stated in quantities(answer):
            if stated.unit == currency and not all(_among(v, implied) for v in (stated.low, stated.high)):
                new.append(f"{stated.low:g} {currency}")
    return list(dict.fromkeys(new))


def _values(known: Iterable[Quantity]) -> Iterable[float]:
    for quantity in known:
        yield from (quantity.low, quantity.high)


def _implied(sums: list[float], counts: list[float]) -> set[float]:
    """The sums, their sums and differences, each times a count, and each count percent of them."""
    implied = set(sums)
    implied |= {a + b for a, b in product(sums, repeat=2)} | {abs(a - b) for a, b in product(sums, repeat=2)}
    implied |= {a * n for a in sums for n in counts}
    implied |= {a * p / 100 for a in sums for p in counts if p < 100}
    implied |= {a * (1 - p / 100) for a in sums for p in counts if p < 100}
    return implied


def _among(value: float, implied: set[float]) -> bool:
    return any(abs(value - known) < _CENT for known in implied)
