"""Database access: the embedded server, engines and sessions, span partitions, migrations."""

from evallens.db.base import Base
from evallens.db.engine import create_db_engine, create_session_factory, ping
from evallens.db.server import DatabaseServer, open_database

__all__ = [
    "Base",
    "DatabaseServer",
    "create_db_engine",
    "create_session_factory",
    "open_database",
    "ping",
]
