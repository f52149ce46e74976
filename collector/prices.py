"""The model price table in PostgreSQL: the default shipped as data, and edits from the CLI."""

import json
from importlib import resources
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from collector.pricebook import PriceBook, PriceEntry, check_pattern, span_cost
from evallens.db.models.prices import ModelPrice
from evallens.errors import EvallensError
from evallens.telemetry.cost import Price

__all__ = [
    "InvalidPrice",
    "PriceBook",
    "PriceEntry",
    "check_price",
    "default_prices",
    "list_prices",
    "price_as_dict",
    "seed_default_prices",
    "set_price",
    "span_cost",
]


# the price columns are NUMERIC(14, 6)
PRICE_SCALE = 6
MAX_PRICE_USD = 10.0 ** (14 - PRICE_SCALE)


class InvalidPrice(EvallensError):
    """A price the table cannot hold (no model name, no per-token pair and no GPU-hour price, or a negative
    one)."""


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
            pattern=item.get("pattern"),
        )
        for item in json.loads(text)["prices"]
    ]


def check_price(price: Price) -> None:
    """Raise ``InvalidPrice`` unless ``price`` is a per-token pair or a GPU-hour price, all non-negative
    numbers the table can hold."""
    if not price.model.strip():  # stored, it is a price no model's name can match
        raise InvalidPrice("a price needs a model name, not an empty or blank one")
    values = [price.input_usd_per_mtok, price.output_usd_per_mtok, price.gpu_hour_usd]
    if any(value is not None and value < 0 for value in values):
        raise InvalidPrice(f"prices must not be negative: {price.model}")
    # NaN is never < 0 (and would cost each span of the model NaN); inf and 1e8 fail the insert
    if any(value is not None and not round(value, PRICE_SCALE) < MAX_PRICE_USD for value in values):
        raise InvalidPrice(f"prices must be numbers under {MAX_PRICE_USD:,.0f} USD: {price.model}")
    per_token = price.input_usd_per_mtok is not None and price.output_usd_per_mtok is not None
    if not per_token and price.gpu_hour_usd is None:
        raise InvalidPrice(
            f"{price.model}: give both input and output prices per 1M tokens, or a GPU-hour price"
        )


def set_price(session: Session, entry: PriceEntry) -> None:
    """Insert or replace the price of ``entry.price.model`` valid from ``entry.valid_from``."""
    check_price(entry.price)
    if entry.pattern is not None:
        try:
            check_pattern(entry.pattern)
        except ValueError as error:
            raise InvalidPrice(str(error)) from None
    values = {
        "model": entry.price.model,
        "pattern": entry.pattern,
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
            pattern=row.pattern,
        )
        for row in rows
    ]


def price_as_dict(entry: PriceEntry) -> dict[str, Any]:
    """One price row as plain JSON-ready values (for ``prices list --json``)."""
    return {
        "model": entry.price.model,
        "pattern": entry.pattern,
        "provider": entry.provider,
        "input_usd_per_mtok": entry.price.input_usd_per_mtok,
        "output_usd_per_mtok": entry.price.output_usd_per_mtok,
        "gpu_hour_usd": entry.price.gpu_hour_usd,
        "valid_from": entry.valid_from.isoformat(),
        "valid_to": entry.valid_to.isoformat() if entry.valid_to else None,
    }
