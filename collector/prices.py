"""The model price table: the default shipped as data, edits from the CLI, and cost tags on spans."""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from collector.records import EPOCH, SpanRecord
from evallens.db.models.prices import ModelPrice
from evallens.errors import EvallensError
from evallens.telemetry.cost import Price, gpu_time_cost_usd, token_cost_usd

NS_PER_US = 1000


class InvalidPrice(EvallensError):
    """A price the table cannot hold (no per-token pair and no GPU-hour price, or a negative one)."""


@dataclass(frozen=True)
class PriceEntry:
    """One row of the price table: a price, who sells it and from when to when it holds."""

    price: Price
    provider: str | None = None
    valid_from: datetime = EPOCH
    valid_to: datetime | None = None


def default_prices() -> list[PriceEntry]:
    """The small price table shipped with evallens (``collector/data/default_prices.json``)."""
    text = resources.files("collector").joinpath("data/default_prices.json").read_text()
    return [
        PriceEntry(
            price=Price(
                model=item["model"],
                input_usd_per_mtok=item.get("input_usd_per_mtok"),
                output_usd_per_mtok=item.get("output_usd_per_mtok"),
                gpu_hour_usd=item.get("gpu_hour_usd"),
            ),
            provider=item.get("provider"),
        )
        for item in json.loads(text)["prices"]
    ]


def check_price(price: Price) -> None:
    """Raise ``InvalidPrice`` unless ``price`` is a per-token pair or a GPU-hour price, all non-negative."""
    values = [price.input_usd_per_mtok, price.output_usd_per_mtok, price.gpu_hour_usd]
    if any(value is not None and value < 0 for value in values):
        raise InvalidPrice(f"prices must not be negative: {price.model}")
    per_token = price.input_usd_per_mtok is not None and price.output_usd_per_mtok is not None
    if not per_token and price.gpu_hour_usd is None:
        raise InvalidPrice(
            f"{price.model}: give both input and output prices per 1M tokens, or a GPU-hour price"
        )


def set_price(session: Session, entry: PriceEntry) -> None:
    """Insert or replace the price of ``entry.price.model`` valid from ``entry.valid_from``."""
    check_price(entry.price)
    values = {
        "model": entry.price.model,
        "provider": entry.provider,
        "input_usd_per_mtok": entry.price.input_usd_per_mtok,
        "output_usd_per_mtok": entry.price.output_usd_per_mtok,
        "gpu_hour_usd": entry.price.gpu_hour_usd,
        "valid_from": entry.valid_from,
        "valid_to": entry.valid_to,
    }
    statement = insert(ModelPrice).values(values)
    updates = {key: statement.excluded[key] for key in values if key not in ("model", "valid_from")}
    session.execute(statement.on_conflict_do_update(index_elements=["model", "valid_from"], set_=updates))


def seed_default_prices(session: Session) -> int:
    """Add the default price of every model the table does not know yet; return how many were added."""
    known = set(session.scalars(select(ModelPrice.model).distinct()))
    missing = [entry for entry in default_prices() if entry.price.model not in known]
    for entry in missing:
        set_price(session, entry)
    return len(missing)


def list_prices(session: Session) -> list[PriceEntry]:
    """Every row of the price table, by model and validity."""
    rows = session.scalars(select(ModelPrice).order_by(ModelPrice.model, ModelPrice.valid_from))
    return [
        PriceEntry(
            price=Price(row.model, row.input_usd_per_mtok, row.output_usd_per_mtok, row.gpu_hour_usd),
            provider=row.provider,
            valid_from=row.valid_from,
            valid_to=row.valid_to,
        )
        for row in rows
    ]


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
        for span in spans:
            if span.cost_usd is None and span.model and (span.input_tokens or span.output_tokens):
                price = self.price_for(span.model, span.start_time_ns)
                if price is not None:
                    span.cost_usd = span_cost(span, price)


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


def price_as_dict(entry: PriceEntry) -> dict[str, Any]:
    """One price row as plain JSON-ready values (for ``prices list --json``)."""
    return {
        "model": entry.price.model,
        "provider": entry.provider,
        "input_usd_per_mtok": entry.price.input_usd_per_mtok,
        "output_usd_per_mtok": entry.price.output_usd_per_mtok,
        "gpu_hour_usd": entry.price.gpu_hour_usd,
        "valid_from": entry.valid_from.isoformat(),
        "valid_to": entry.valid_to.isoformat() if entry.valid_to else None,
    }
