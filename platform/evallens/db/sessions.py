"""Sessions for a command on the embedded default or EVALLENS_DATABASE_URL, reachable and migrated."""

import contextlib
import logging
from collections.abc import Iterator

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from evallens.db import create_db_engine, create_session_factory, ping
from evallens.db.migrate import head_revision, known_revision, migration_lock, upgrade
from evallens.db.partitions import create_partitions_ahead
from evallens.db.server import DatabaseServer, database
from evallens.errors import DatabaseUnavailable
from evallens.settings import DatabaseSettings

logger = logging.getLogger(__name__)


def ensure_schema(server: DatabaseServer, engine: Engine, settings: DatabaseSettings) -> bool:
    """Bring the schema to head: always on the embedded default (it is ours), on an external server
    only with ``database_migrate``; otherwise one clear line (a schema newer than this code's is
    ``SchemaTooNew``, never touched). Returns whether it migrated."""
    current, head = known_revision(engine), head_revision()
    if current == head:
        return False
    if server.embedded is None and not settings.database_migrate:
        state = "empty" if current is None else f"at revision {current}, the code needs {head}"
        raise DatabaseUnavailable(
            f"the database schema is {state}: run `evallens db upgrade` "
            "(or set EVALLENS_DATABASE_MIGRATE=true to migrate on start)"
        )
    migrate_to_head(engine, server.url, settings.partition_days_ahead)
    return True


def migrate_to_head(engine: Engine, url: str, partition_days_ahead: int) -> None:
    """Migrate to head and create the span partitions ahead, holding the migration lock: a second
    process doing the same waits for it, then finds nothing to do."""
    with migration_lock(engine):
        current, head = known_revision(engine), head_revision()
        if current != head:  # another process may have migrated while we waited
            logger.info("migrating the database schema from %s to %s", current, head)
            upgrade(url)
        with engine.begin() as partitions:
            create_partitions_ahead(partitions, partition_days_ahead)


@contextlib.contextmanager
def open_engine(settings: DatabaseSettings | None = None) -> Iterator[Engine]:
    """An engine on a reachable database at the head schema revision (migrated when it may be)."""
    settings = settings or DatabaseSettings()
    with database(settings) as server:
        engine = create_db_engine(server.url, connect_timeout_s=settings.database_connect_timeout_s)
        try:
            ping(engine)
            ensure_schema(server, engine, settings)
            yield engine
        finally:
            engine.dispose()


@contextlib.contextmanager
def open_sessions(settings: DatabaseSettings | None = None) -> Iterator[sessionmaker[Session]]:
    """Sessions on a reachable database at the head schema revision."""
    with open_engine(settings) as engine:
        yield create_session_factory(engine)
