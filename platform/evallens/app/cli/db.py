"""``evallens db``: migrate the schema and show where the database stands."""

import typer
from rich.console import Console

from evallens.db import create_db_engine, ping
from evallens.db.migrate import current_revision, head_revision, known_revision, migration_lock, upgrade
from evallens.db.partitions import create_partitions_ahead
from evallens.db.server import database
from evallens.settings import DatabaseSettings

app = typer.Typer(help="Database schema: migrations and status.", no_args_is_help=True)


@app.command("upgrade")
def upgrade_command(revision: str = typer.Argument("head", help="Alembic revision to migrate to.")) -> None:
    """Create or migrate the schema (embedded PostgreSQL unless EVALLENS_DATABASE_URL is set)."""
    settings = DatabaseSettings()
    with database(settings) as server:
        engine = create_db_engine(server.url, connect_timeout_s=settings.database_connect_timeout_s)
        ping(engine)
        with migration_lock(engine):  # a second upgrade at once waits, then finds nothing to do
            upgrade(server.url, revision)
            with engine.begin() as connection:
                created = create_partitions_ahead(connection, settings.partition_days_ahead)
        Console().print(
            f"database at revision {current_revision(engine)}; {len(created)} span partitions created"
        )
        engine.dispose()


@app.command("status")
def status_command() -> None:
    """Show the server version, the schema revision and whether it is up to date."""
    settings = DatabaseSettings()
    with database(settings) as server:
        engine = create_db_engine(server.url, connect_timeout_s=settings.database_connect_timeout_s)
        version = ping(engine)
        current, head = known_revision(engine), head_revision()
        state = "up to date" if current == head else f"behind (head is {head}): run `evallens db upgrade`"
        where = "embedded" if server.embedded is not None else "external"
        Console().print(f"PostgreSQL {version} ({where}); schema revision {current}: {state}")
        engine.dispose()
