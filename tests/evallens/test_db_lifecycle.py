"""The schema's lifecycle through the real CLI: a schema newer than this evallens, one never migrated, two
upgrades at once; each mistake one line and exit 2, nothing changed."""

import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from evallens.db import create_db_engine
from evallens.db.migrate import MIGRATION_LOCK, SchemaTooNew, head_revision, upgrade
from evallens.db.sessions import migrate_to_head
from evallens.settings import child_environment

FUTURE = "0099_from_a_newer_evallens"
NEEDS_SCHEMA = [["eval", "runs"], ["cases", "mine"], ["keys", "list"], ["prices", "list"]]


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evallens", *args],
        env=child_environment({"COLUMNS": "200", **env}),
        capture_output=True,
        text=True,
        timeout=180,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("evallens: error: "), result.stderr
    return lines[0]


def schema_of(url: str) -> tuple[list[str], list[tuple[str, ...]], int]:
    """The tables, the Alembic revision and the number of price rows: what a command could change."""
    with psycopg.connect(url) as connection:
        tables = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall()
        names = [row[0] for row in tables]
        if "alembic_version" not in names:
            return names, [], 0
        versions = connection.execute("SELECT version_num FROM alembic_version").fetchall()
        prices = connection.execute("SELECT count(*) FROM model_prices").fetchone()
    return names, versions, prices[0] if prices else 0


@pytest.mark.parametrize(
    ("command", "migrate"),
    [(["db", "upgrade"], False), (["db", "status"], False), *((c, True) for c in NEEDS_SCHEMA)],
)
def test_a_schema_newer_than_this_evallens_is_refused_in_one_line(
    command: list[str], migrate: bool, database_url: str, tmp_path: Path
) -> None:
    """An older evallens against a schema a newer one migrated: both revisions and what to do, even where
    it may migrate on start; the database as it was."""
    with psycopg.connect(database_url) as connection:
        connection.execute("UPDATE alembic_version SET version_num = %s", (FUTURE,))
    before = schema_of(database_url)
    env = {
        "EVALLENS_DATABASE_URL": database_url,
        "EVALLENS_DATA_DIR": str(tmp_path),
        "EVALLENS_DATABASE_MIGRATE": str(migrate).lower(),
    }
    said = one_line(run_cli(*command, env=env))
    assert FUTURE in said and f"newest is {head_revision()}" in said and "nothing was changed" in said
    assert schema_of(database_url) == before


def test_upgrade_refuses_a_newer_schema_for_every_caller(database_url: str) -> None:
    """``upgrade`` itself (the demo and the tests call it directly) words it, before Alembic is asked."""
    with psycopg.connect(database_url) as connection:
        connection.execute("UPDATE alembic_version SET version_num = %s", (FUTURE,))
    before = schema_of(database_url)
    with pytest.raises(SchemaTooNew, match=FUTURE):
        upgrade(database_url)
    assert schema_of(database_url) == before


@pytest.mark.parametrize("command", NEEDS_SCHEMA)
def test_a_database_never_migrated_says_to_run_db_upgrade(
    command: list[str], empty_database_url: str, tmp_path: Path
) -> None:
    env = {"EVALLENS_DATABASE_URL": empty_database_url, "EVALLENS_DATA_DIR": str(tmp_path)}
    said = one_line(run_cli(*command, env=env))
    assert "the database schema is empty: run `evallens db upgrade`" in said
    assert schema_of(empty_database_url) == ([], [], 0)


def test_upgrading_to_a_revision_there_is_not_is_one_line(database_url: str, tmp_path: Path) -> None:
    env = {"EVALLENS_DATABASE_URL": database_url, "EVALLENS_DATA_DIR": str(tmp_path)}
    said = one_line(run_cli("db", "upgrade", "nosuch", env=env))
    assert "cannot migrate to nosuch" in said


def wait_for_lock_waiters(holder: psycopg.Connection, wanted: int, all_alive: Callable[[], bool]) -> int:
    """How many sessions wait for the migration lock, looked at until ``wanted`` do or a waiter ended."""
    num_waiting = 0
    while num_waiting < wanted and all_alive():
        num_waiting = holder.execute(
            "SELECT count(*) FROM pg_locks JOIN pg_database d ON d.oid = pg_locks.database"
            " WHERE locktype = 'advisory' AND NOT granted AND objid::bigint = %s"
            " AND d.datname = current_database()",
            (MIGRATION_LOCK,),
        ).fetchone()[0]  # type: ignore[index]
        time.sleep(0.05)  # between looks at pg_locks; how long does not matter
    return num_waiting


def test_two_upgrades_at_once_on_an_empty_database(empty_database_url: str, tmp_path: Path) -> None:
    """Both start while this test holds the migration lock, so they are sure to run together; each waits
    for it (Alembic takes none), then one migrates and the other finds nothing to do."""
    env = child_environment({"EVALLENS_DATABASE_URL": empty_database_url, "EVALLENS_DATA_DIR": str(tmp_path)})
    command = [sys.executable, "-m", "evallens", "db", "upgrade"]
    with psycopg.connect(empty_database_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        upgrades = [
            subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        num_waiting = wait_for_lock_waiters(holder, 2, lambda: all(p.poll() is None for p in upgrades))
        holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    results = [process.communicate(timeout=180) for process in upgrades]
    assert num_waiting == 2, results
    for process, (stdout, stderr) in zip(upgrades, results, strict=True):
        assert process.returncode == 0, stderr
        assert f"database at revision {head_revision()}" in stdout
    tables, versions, _ = schema_of(empty_database_url)
    assert versions == [(head_revision(),)] and "spans" in tables


def test_the_demos_migration_waits_for_the_migration_lock(empty_database_url: str) -> None:
    """The demo migrates through ``migrate_to_head`` (on EVALLENS_DATABASE_URL too, where another evallens
    may be migrating the same database): it waits for the lock, then migrates and creates partitions."""
    engine = create_db_engine(empty_database_url)
    try:
        with ThreadPoolExecutor(1) as pool, psycopg.connect(empty_database_url, autocommit=True) as holder:
            holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
            migrating = pool.submit(migrate_to_head, engine, empty_database_url, 1)
            num_waiting = wait_for_lock_waiters(holder, 1, lambda: not migrating.done())
            tables_meanwhile = schema_of(empty_database_url)[0]
            holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
            migrating.result(timeout=180)
    finally:
        engine.dispose()
    assert num_waiting == 1 and tables_meanwhile == []
    tables, versions, _ = schema_of(empty_database_url)
    assert versions == [(head_revision(),)] and "spans" in tables
