"""``evallens db`` against the embedded default and an external server; bad URLs fail in one line."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect

from evallens.db import create_db_engine
from evallens.db.server import DatabaseServer, embedded_url, ensure_database, start_embedded
from evallens.settings import child_environment


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evallens", *args],
        env=child_environment(env),
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture(scope="module")
def external_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DatabaseServer]:
    """A second embedded server standing in for a user's external PostgreSQL."""
    server = start_embedded(tmp_path_factory.mktemp("external") / "data")
    ensure_database(embedded_url(server, "postgres"), "users_db")
    yield DatabaseServer(url=embedded_url(server, "users_db"), embedded=server)
    server.cleanup()


def test_upgrade_on_embedded_default(tmp_path: Path) -> None:
    env = {"EVALLENS_DATA_DIR": str(tmp_path / "data"), "EVALLENS_DATABASE_URL": ""}
    result = run_cli("db", "upgrade", env=env)
    assert result.returncode == 0, result.stderr
    assert "database at revision" in result.stdout

    status = run_cli("db", "status", env=env)
    assert status.returncode == 0, status.stderr
    assert "(embedded)" in status.stdout and "up to date" in status.stdout
    assert (tmp_path / "data" / "postgres" / "PG_VERSION").exists()


def test_upgrade_on_external_url(external_server: DatabaseServer, tmp_path: Path) -> None:
    env = {"EVALLENS_DATABASE_URL": external_server.url, "EVALLENS_DATA_DIR": str(tmp_path)}
    result = run_cli("db", "upgrade", env=env)
    assert result.returncode == 0, result.stderr
    engine = create_db_engine(external_server.url)
    assert {"spans", "eval_runs"} <= set(inspect(engine).get_table_names())
    engine.dispose()
    # the embedded default was not started
    assert not (tmp_path / "postgres").exists()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://nobody@127.0.0.1:1/nowhere", "127.0.0.1"),
        ("postgresql://postgres@/no_such_db?host=/nonexistent-socket-dir", "nonexistent-socket-dir"),
        # another database's URL is named as such, not tried as PostgreSQL (and its password not shown)
        ("mysql://root:hunter2@localhost/x", "not a PostgreSQL URL: mysql://root:***@localhost/x"),
    ],
)
def test_bad_database_url_is_one_line_and_exit_2(url: str, says: str, tmp_path: Path) -> None:
    result = run_cli("db", "upgrade", env={"EVALLENS_DATABASE_URL": url, "EVALLENS_DATA_DIR": str(tmp_path)})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("evallens: error:")
    assert says in lines[0]
    assert "Traceback" not in result.stderr and "hunter2" not in result.stderr
