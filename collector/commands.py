"""What the ``evallens collector`` and ``evallens prices`` commands call: each returns a typed report."""

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from collector.prices import PriceEntry, list_prices, seed_default_prices, set_price
from collector.quarantine_admin import (
    QuarantineListing,
    RetryReport,
    drop_quarantine,
    list_quarantine,
    retry_quarantine,
)
from collector.records import EPOCH
from collector.retention import PruneReport, parse_age, prune_spans
from collector.runtime import Collector
from collector.workers import return_freed_memory
from evallens.auth import ensure_safe_bind
from evallens.db import create_db_engine, ping
from evallens.db.server import DatabaseServer, database
from evallens.db.sessions import ensure_schema, open_engine
from evallens.errors import DatabaseUnavailable
from evallens.settings import CollectorSettings, DatabaseSettings
from evallens.settings.collector import DEFAULT_QUARANTINE_RETRY_BATCH
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
        migrate_if_reachable(server, settings)
        Collector(settings, server.url).serve(ready)


def migrate_if_reachable(server: DatabaseServer, settings: DatabaseSettings) -> None:
    """Bring the schema to head at start; an unreachable PostgreSQL is left to the spool."""
    engine = create_db_engine(server.url, connect_timeout_s=settings.database_connect_timeout_s)
    try:
        try:
            ping(engine)
        except DatabaseUnavailable:
            return
        ensure_schema(server, engine, settings)
    finally:
        engine.dispose()


def prune(settings: DatabaseSettings, older_than: str) -> PruneReport:
    """Drop span partitions, metric samples, their rollups and GenAI content older than ``older_than``
    (``30d``, ``4w``)."""
    age = parse_age(older_than)
    with open_engine(settings) as engine:
        return prune_spans(engine, age)


def price_table(settings: DatabaseSettings, update: PriceEntry | None = None) -> list[PriceEntry]:
    """The price table (with the shipped defaults seeded), after upserting ``update`` if given."""
    with open_engine(settings) as engine, Session(engine) as session, session.begin():
        seed_default_prices(session)
        if update is not None:
            set_price(session, update)
        return list_prices(session)


def price_entry(
    model: str,
    *,
    input_usd_per_mtok: float | None,
    output_usd_per_mtok: float | None,
    gpu_hour_usd: float | None,
    provider: str | None,
    valid_from: datetime | None,
    pattern: str | None = None,
) -> PriceEntry:
    """A price row from command-line options (a naive ``valid_from`` is read as UTC)."""
    start = valid_from.replace(tzinfo=valid_from.tzinfo or UTC) if valid_from else EPOCH
    return PriceEntry(
        price=Price(model, input_usd_per_mtok, output_usd_per_mtok, gpu_hour_usd),
        provider=provider,
        valid_from=start,
        pattern=pattern,
    )


def quarantine_list(settings: CollectorSettings, project: str | None, limit: int) -> QuarantineListing:
    """The newest quarantined spans, their total, and dead-letter files waiting for the collector."""
    with open_engine(settings) as engine, Session(engine) as session:
        return list_quarantine(session, project, limit, settings.spool_dir / "quarantine")


def quarantine_retry(
    settings: CollectorSettings,
    ids: Sequence[int],
    every: bool,
    project: str | None,
    batch_size: int = DEFAULT_QUARANTINE_RETRY_BATCH,
) -> RetryReport:
    """Write quarantined spans into ``spans`` again, ``batch_size`` at a time, making their days'
    partitions as many at a time as a flush does; those stored leave the quarantine."""
    with database(settings) as server:
        engine = create_db_engine(server.url, connect_timeout_s=settings.database_connect_timeout_s)
        try:
            ping(engine)
            ensure_schema(server, engine, settings)
            max_new_days = settings.collector_max_new_days_per_flush
            return retry_quarantine(engine, server.url, ids, every, project, max_new_days, batch_size)
        finally:
            engine.dispose()


def quarantine_drop(settings: DatabaseSettings, ids: Sequence[int], every: bool, project: str | None) -> int:
    """Delete quarantined spans for good; return how many."""
    with open_engine(settings) as engine, Session(engine) as session, session.begin():
        return drop_quarantine(session, ids, every, project)
