"""Sessions for a command on the embedded default or EVALLENS_DATABASE_URL, reachable and migrated."""

import contextlib
from collections.abc import Iterator

from sqlalchemy.orm import Session, sessionmaker

from evallens.db import create_db_engine, create_session_factory, ping
from evallens.db.migrate import current_revision, head_revision
from evallens.db.server import database
from evallens.errors import DatabaseUnavailable
from evallens.settings import DatabaseSettings


@contextlib.contextmanager
def open_sessions(settings: DatabaseSettings | None = None) -> Iterator[sessionmaker[Session]]:
    """Sessions on a reachable database at the head schema revision."""
    settings = settings or DatabaseSettings()
    with database(settings) as server:
        engine = create_db_engine(server.url, connect_timeout_s=settings.database_connect_timeout_s)
        try:
            ping(engine)
            if current_revision(engine) != head_revision():
                raise DatabaseUnavailable("the database schema is not current: run `evallens db upgrade`")
            yield create_session_factory(engine)
        finally:
            engine.dispose()
