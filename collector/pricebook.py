"""Cost tags on spans from a price book (no database here: decode workers use it).

Clients name one model many ways (``SmolLM2-135M-Instruct``, ``smollm2-135m-instruct``,
``openai/gpt-4o``, ``gpt-4o-2024-08-06``), so a name is matched case-insensitively, with and without
its provider prefix, against each row's model name (exactly, or as a prefix ending at a separator)
and its glob pattern. The most specific match wins: the one with the most literal characters.
"""

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from fnmatch import translate
from typing import Any

from collector.records import EPOCH, SpanRecord
from evallens.telemetry.cost import Price, gpu_time_cost_usd, token_cost_usd

NS_PER_US = 1000
# what may follow a priced name in a longer one: gpt-4o-2024-08-06, llama3:8b, model@2024, model.v2
VARIANT_SEPARATORS = "-_:@."
WILDCARDS = re.compile(r"[*?]|\[[^\]]*\]")
# names resolved, per process (decode workers get a pickled copy of the book with every request);
# a client inventing names cannot grow it without bound
MAX_RESOLVED_NAMES = 4096
# an exact name beats any pattern or prefix, whatever their lengths
EXACT_BONUS = 1_000_000

Window = tuple[int, int | None, Price]
RuleKey = tuple[str, str | None]
_UNRESOLVED: Any = object()
# (the book's rules, a span's model name) -> the rule it matched
_resolved: dict[tuple[int, str], RuleKey | None] = {}


@dataclass(frozen=True)
class PriceEntry:
    """One row of the price table: a price, who sells it, the names it also covers, and when it holds.

    ``pattern`` is a case-insensitive glob (``gpt-4o-20*``, ``*smollm2-135m*``) matched against
    the model names spans carry, with and without a provider prefix.
    """

    price: Price
    provider: str | None = None
    valid_from: datetime = EPOCH
    valid_to: datetime | None = None
    pattern: str | None = None


@dataclass(frozen=True)
class _Rule:
    key: RuleKey
    name: str
    pattern: re.Pattern[str] | None
    pattern_weight: int


class PriceBook:
    """Prices by model, looked up by how clients name models (see the module docstring)."""

    def __init__(self, entries: Iterable[PriceEntry]) -> None:
        self._windows: dict[RuleKey, list[Window]] = {}
        for entry in entries:
            valid_to = _micros(entry.valid_to) if entry.valid_to is not None else None
            key = (entry.price.model, entry.pattern)
            self._windows.setdefault(key, []).append((_micros(entry.valid_from), valid_to, entry.price))
        self._rules = [_rule(key) for key in self._windows]
        # which rule a name matches depends on the rules only, so books with the same rules share answers
        self._rules_id = hash(tuple(self._windows))

    def price_for(self, model: str, start_time_ns: int) -> Price | None:
        """The price of ``model`` in force when a span started at ``start_time_ns``."""
        cache_key = (self._rules_id, model)
        key = _resolved.get(cache_key, _UNRESOLVED)
        if key is _UNRESOLVED:
            if len(_resolved) >= MAX_RESOLVED_NAMES:
                _resolved.clear()
            key = _resolved[cache_key] = self._resolve(model)
        if key is None:
            return None
        start_us = start_time_ns // NS_PER_US
        for valid_from_us, valid_to_us, price in self._windows[key]:
            if valid_from_us <= start_us and (valid_to_us is None or start_us < valid_to_us):
                return price
        return None

    def _resolve(self, model: str) -> RuleKey | None:
        best: tuple[int, RuleKey] | None = None
        for name in model_names(model):
            for rule in self._rules:
                weight = _weight(rule, name)
                if weight and (best is None or weight > best[0]):
                    best = (weight, rule.key)
        return best[1] if best is not None else None

    def tag_costs(self, spans: Iterable[SpanRecord]) -> None:
        """Give spans with tokens and no cost the cost their model's price implies."""
        for _ in self.tagged(spans):
            pass

    def tagged(self, spans: Iterable[SpanRecord]) -> Iterator[SpanRecord]:
        """``spans`` one by one, each tagged as ``tag_costs`` does."""
        for span in spans:
            if span.cost_usd is None and span.model and (span.input_tokens or span.output_tokens):
                price = self.price_for(span.model, span.start_time_ns)
                if price is not None:
                    span.cost_usd = span_cost(span, price)
            yield span


def model_names(model: str) -> list[str]:
    """The names a span's model is matched by: lower-cased, then without its provider prefix."""
    name = model.strip().lower()
    names = [name]
    if "/" in name and (bare := name.rsplit("/", 1)[1]):
        names.append(bare)
    return names


def check_pattern(pattern: str) -> None:
    """Raise ``ValueError`` for a pattern that is empty or matches every name."""
    if not pattern.strip() or not WILDCARDS.sub("", pattern).strip():
        raise ValueError(f"pattern {pattern!r} must name some characters of the model, not only wildcards")


def _rule(key: RuleKey) -> _Rule:
    model, pattern = key
    if pattern is None:
        return _Rule(key, model.lower(), None, 0)
    compiled = re.compile(translate(pattern.lower()))
    return _Rule(key, model.lower(), compiled, len(WILDCARDS.sub("", pattern)))


def _weight(rule: _Rule, name: str) -> int:
    """How specifically ``rule`` matches ``name``: 0 for no match, else its literal characters."""
    if name == rule.name:
        return EXACT_BONUS + len(name)
    weight = 0
    if name.startswith(rule.name) and name[len(rule.name)] in VARIANT_SEPARATORS:
        weight = len(rule.name)
    if rule.pattern is not None and rule.pattern.match(name):
        weight = max(weight, rule.pattern_weight)
    return weight


def span_cost(span: SpanRecord, price: Price) -> float | None:
    """Per-token cost when the price is per token; else GPU-hours over the span's share of the engine.

    A client's span of a self-hosted model has no engine time: its duration stands in for it.
    """
    cost = token_cost_usd(price, span.input_tokens or 0, span.output_tokens or 0)
    if cost is not None:
        return cost
    engine_time_s = span.engine_time_s if span.engine_time_s is not None else span.duration_ms / 1000
    share = 1.0 / span.concurrent_requests if span.concurrent_requests else 1.0
    return gpu_time_cost_usd(price, engine_time_s, share)


def _micros(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)
