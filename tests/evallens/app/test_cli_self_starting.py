"""Commands on a fresh data dir: they migrate the embedded default themselves, print nothing before their
own first line, print whole values when piped, and find the servers where the servers' settings say."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from evallens.app.demo.processes import ManagedProcess
from evallens.app.demo.stack import EVALLENS
from evallens.db.server import HANDLES_FILE
from evallens.ports import free_port
from evallens.service.weights.tiny import build_tiny_llama
from evallens.settings import child_environment


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command as a script runs it: output piped, no XDG_RUNTIME_DIR (as in CI and containers)."""
    environment = child_environment(env)
    environment.pop("XDG_RUNTIME_DIR", None)
    environment.pop("COLUMNS", None)
    return subprocess.run(
        [sys.executable, "-m", "evallens", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir no command has used yet: no schema, no price rows."""
    return tmp_path_factory.mktemp("d")


def embedded(data_dir: Path) -> dict[str, str]:
    return {"EVALLENS_DATA_DIR": str(data_dir), "EVALLENS_DATABASE_URL": ""}


def postgres_running(pgdata: Path) -> bool:
    pid_file = pgdata / "postmaster.pid"
    return pid_file.exists() and psutil.pid_exists(int(pid_file.read_text().split()[0]))


def test_a_fresh_data_dir_migrates_itself_and_prints_whole_prices_when_piped(data_dir: Path) -> None:
    result = run_cli("prices", "list", env=embedded(data_dir))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no third-party warning before (or after) our output
    assert result.stdout.startswith("┏")  # the first line is our table
    row = next(line for line in result.stdout.splitlines() if "HuggingFaceTB/SmolLM2-135M-Instruct" in line)
    assert "self-hosted" in row and "1970-01-01T00:00:00+00:00" in row
    assert "…" not in result.stdout


@pytest.mark.parametrize(
    ("command", "check"),
    [
        (["prices", "list", "--format", "json"], lambda rows: any(r["provider"] == "openai" for r in rows)),
        (["keys", "list", "--format", "json"], lambda rows: rows == []),
        (["eval", "runs", "--format", "json"], lambda rows: rows == []),
        (["cases", "mine", "--format", "json"], lambda report: report["candidates"] == []),
    ],
    ids=["prices", "keys", "eval runs", "cases mine"],
)
def test_list_commands_print_json_and_nothing_else_on_stdout(
    data_dir: Path, command: list[str], check: object
) -> None:
    result = run_cli(*command, env=embedded(data_dir))
    assert result.returncode == 0, result.stderr
    assert check(json.loads(result.stdout))  # type: ignore[operator]


def test_an_external_server_is_migrated_only_when_asked(empty_database_url: str) -> None:
    refused = run_cli("eval", "runs", env={"EVALLENS_DATABASE_URL": empty_database_url})
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert "the database schema is empty: run `evallens db upgrade`" in line
    assert "EVALLENS_DATABASE_MIGRATE=true" in line
    migrated = run_cli(
        "eval", "runs", env={"EVALLENS_DATABASE_URL": empty_database_url, "EVALLENS_DATABASE_MIGRATE": "true"}
    )
    assert migrated.returncode == 0, migrated.stderr
    again = run_cli("eval", "runs", env={"EVALLENS_DATABASE_URL": empty_database_url})
    assert again.returncode == 0, again.stderr


def test_kb_load_finds_the_service_where_its_settings_put_it(tmp_path: Path) -> None:
    (tmp_path / "returns.md").write_text("# Returns\n\nWithin 30 days.\n")
    port = free_port()  # nothing listens: the error names the URL the command chose
    result = run_cli("kb", "load", str(tmp_path), env={"EVALLENS_SERVICE_PORT": str(port)})
    assert result.returncode == 2
    assert f"cannot reach the service at http://127.0.0.1:{port}" in result.stderr
    refused = run_cli("kb", "load", str(tmp_path), env={"EVALLENS_SERVICE_PORT": "-1"})
    assert refused.returncode == 2
    assert refused.stderr.startswith("evallens: error: EVALLENS_SERVICE_PORT: Input should be greater")


def test_the_embedded_server_stops_with_its_last_user_even_after_one_was_killed(data_dir: Path) -> None:
    pgdata = data_dir / "postgres"
    killed = subprocess.Popen([sys.executable, "-c", "pass"])
    killed.wait()  # a user that died without removing itself from the list
    (pgdata / HANDLES_FILE).write_text(json.dumps([killed.pid]))
    try:
        result = run_cli("db", "status", env=embedded(data_dir))
        assert result.returncode == 0, result.stderr
        assert not postgres_running(pgdata)
    finally:
        if postgres_running(pgdata):  # never leave a server behind, even when the test fails
            pid = int((pgdata / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 15)


@pytest.mark.slow
def test_a_terminated_service_stops_the_embedded_server_it_started(tmp_path: Path) -> None:
    # SIGTERM (systemd, `docker stop`, `kill`) drains the service, then unwinds it like Ctrl-C: without that,
    # uvicorn re-raised the signal under its default handler, the process ended at once, and the embedded
    # PostgreSQL it had started kept running
    port = free_port()
    environment = {
        **embedded(tmp_path / "data"),
        "EVALLENS_MODEL_PATH": str(build_tiny_llama(tmp_path / "tiny-model")),
        "EVALLENS_MAX_MODEL_LEN": "512",
        "EVALLENS_SERVICE_PORT": str(port),
    }
    pgdata = tmp_path / "data" / "postgres"
    service = ManagedProcess("service", [*EVALLENS, "service"], tmp_path / "service.log", environment)
    service.start()
    try:
        service.wait_healthy(f"http://127.0.0.1:{port}/readyz", timeout_s=300)
        assert postgres_running(pgdata)
        os.kill(service.pid, signal.SIGTERM)
        assert service.process is not None
        exit_code = service.process.wait(timeout=120)
        assert not postgres_running(pgdata), (tmp_path / "service.log").read_text()[-3000:]
        assert exit_code == 128 + signal.SIGTERM  # as a shell reports a command SIGTERM ended
    finally:
        service.stop()
        if postgres_running(pgdata):  # never leave a server behind, even when the test fails
            os.kill(int((pgdata / "postmaster.pid").read_text().split()[0]), signal.SIGTERM)
