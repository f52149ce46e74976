"""Cost tags on spans from a price book (no database here: decode workers use it)."""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from collector.records import EPOCH, SpanRecord
from evallens.telemetry.cost import Price, gpu_time_cost_usd, token_cost_usd

NS_PER_US = 1000


@dataclass(frozen=True)
class PriceEntry:
    """One row of the price table: a price, who sells it and from when to when it holds."""

    price: Price
    provider: str | None = None
    valid_from: datetime = EPOCH
    valid_to: datetime | None = None


class PriceBook:
    """Prices by model, looked up by exact name or longest prefix (``gpt-4o-mini-2024-07-18``)."""

    def __init__(self, entries: Iterable[PriceEntry]) -> None:
        self._entries: dict[str, list[tuple[int, int | None, Price]]] = {}
        for entry in entries:
            valid_to = _micros(entry.valid_to) if entry.valid_to is not None else None
            window = (_micros(entry.valid_from), valid_to, entry.price)
            self._entries.setdefault(entry.price.model, []).append(window)
        self._by_length = sorted(self._entries, key=len, reverse=True)
        self._resolved: dict[str, str | None] = {}

    def price_for(self, model: str, start_time_ns: int) -> Price | None:
        """The price of ``model`` in force when a span started at ``start_time_ns``."""
        key = self._resolved.get(model, "")
        if key == "":
            key = next((name for name in self._by_length if model.startswith(name)), None)
            self._resolved[model] = key
        if key is None:
            return None
        start_us = start_time_ns // NS_PER_US
        for valid_from_us, valid_to_us, price in self._entries[key]:
            if valid_from_us <= start_us and (valid_to_us is None or start_us < valid_to_us):
                return price
        return None

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


def span_cost(span: SpanRecord, price: Price) -> float | None:
    """Per-token cost when the price is per token; else GPU-hours over the span's share of the engine."""
    cost = token_cost_usd(price, span.input_tokens or 0, span.output_tokens or 0)
    if cost is not None:
        return cost
    engine_time_s = span.engine_time_s if span.engine_time_s is not None else span.duration_ms / 1000
    share = 1.0 / span.concurrent_requests if span.concurrent_requests else 1.0
    return gpu_time_cost_usd(price, engine_time_s, share)


def _micros(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)
