"""What the ``evallens collector`` and ``evallens prices`` commands call: each returns a typed report."""

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from collector.prices import PriceEntry, list_prices, seed_default_prices, set_price
from collector.records import EPOCH
from collector.retention import PruneReport, parse_age, prune_spans
from collector.runtime import Collector
from collector.workers import return_freed_memory
from evallens.auth import ensure_safe_bind
from evallens.db import create_db_engine, ping
from evallens.db.server import database
from evallens.settings import CollectorSettings, DatabaseSettings
from evallens.telemetry.cost import Price


def run_collector(
    settings: CollectorSettings, ready: Callable[[Collector], None] | None = None, insecure: bool = False
) -> None:
    """Run the collector until SIGTERM/SIGINT (embedded PostgreSQL unless a URL is configured).

    Refuses a non-loopback address without auth unless ``insecure``.
    """
    hosts = [settings.collector_http_host]
    if settings.collector_grpc_enabled:
        hosts.append(settings.collector_grpc_host)
    for host in hosts:
        ensure_safe_bind(host, settings.auth_enabled, insecure, "the collector")
    return_freed_memory()  # this process holds request bodies and packed spans in large buffers too
    with database(settings) as server:
        Collector(settings, server.url).serve(ready)


def prune(settings: DatabaseSettings, older_than: str) -> PruneReport:
    """Drop span partitions older than ``older_than`` (``30d``, ``4w``)."""
    age = parse_age(older_than)
    with database(settings) as server:
        engine = create_db_engine(server.url, connect_timeout_s=settings.database_connect_timeout_s)
        try:
            ping(engine)
            return prune_spans(engine, age)
        finally:
            engine.dispose()


def price_table(settings: DatabaseSettings, update: PriceEntry | None = None) -> list[PriceEntry]:
    """The price table (with the shipped defaults seeded), after upserting ``update`` if given."""
    with database(settings) as server:
        engine = create_db_engine(server.url, connect_timeout_s=settings.database_connect_timeout_s)
        try:
            ping(engine)
            with Session(engine) as session, session.begin():
                seed_default_prices(session)
                if update is not None:
                    set_price(session, update)
                return list_prices(session)
        finally:
            engine.dispose()


def price_entry(
    model: str,
    *,
    input_usd_per_mtok: float | None,
    output_usd_per_mtok: float | None,
    gpu_hour_usd: float | None,
    provider: str | None,
    valid_from: datetime | None,
) -> PriceEntry:
    """A price row from command-line options (a naive ``valid_from`` is read as UTC)."""
    start = valid_from.replace(tzinfo=valid_from.tzinfo or UTC) if valid_from else EPOCH
    return PriceEntry(
        price=Price(model, input_usd_per_mtok, output_usd_per_mtok, gpu_hour_usd),
        provider=provider,
        valid_from=start,
    )
