"""Finding 7 of issue 14: every user mistake on the command line is exit code 2 and one readable line."""

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import make_url
from sqlalchemy.exc import TimeoutError as PoolTimeout

from evallens.app.cli._errors import WORDED_ERRORS, one_line
from evallens.db import create_db_engine
from evallens.settings import child_environment

DEEP_YAML = "set: deep\ncases:\n" + "  " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_JSONL = '{"set": "deep", "id": "a", "question": ' + "[" * 100_000 + "]" * 100_000 + "}\n"


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evallens", *args],
        env=child_environment({"COLUMNS": "200", **env}),
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_one_line(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("evallens: error: "), result.stderr
    for part in expected:
        assert part in lines[0], lines[0]


WITHOUT_DATABASE = {
    "unknown command": (["nosuch"], {}, ["No such command 'nosuch'", "--help"]),
    "unknown option": (["eval", "run", "--sett", "x"], {}, ["No such option: --sett"]),
    # 'alpha ' or a blank name was silently another project, beside the one meant, with nothing in it
    "project padded with whitespace": (
        ["eval", "runs"],
        {"EVALLENS_CASES_PROJECT": "alpha "},
        ["EVALLENS_CASES_PROJECT", "starts or ends with whitespace", "did you mean 'alpha'?"],
    ),
    "blank dashboard project": (
        ["dashboard"],
        {"EVALLENS_DASHBOARD_PROJECT": " "},
        ["EVALLENS_DASHBOARD_PROJECT", "a project needs a name"],
    ),
    "--since overflow": (["cases", "mine", "--since", "99999999999d"], {}, ["--since", "at most 36600 days"]),
    "--older-than overflow": (
        ["collector", "prune", "--older-than", "99999999999d"],
        {},
        ["--older-than", "at most 36600 days"],
    ),
    "malformed database URL": (
        ["db", "status"],
        {"EVALLENS_DATABASE_URL": "postgresql://me:secret@host:port/db"},
        ["cannot be parsed"],
    ),
    "non-numeric port": (
        ["collector"],
        {"EVALLENS_COLLECTOR_HTTP_PORT": "http"},
        ["EVALLENS_COLLECTOR_HTTP_PORT", "valid integer", "'http'"],
    ),
    "--repeats past a run's worth": (
        ["eval", "run", "--set", "x", "--repeats", "3000000000"],
        {},
        ["--repeats", "less than or equal to 100"],
    ),
    "--interval past time.sleep": (
        ["eval", "watch", "--set", "x", "--interval", "1e308"],
        {},
        ["--interval", "less than or equal to 604800"],
    ),
    "--settle past time.sleep": (["eval", "watch", "--set", "x", "--settle", "1e308"], {}, ["--settle"]),
    "watch interval setting past time.sleep": (
        ["eval", "watch", "--set", "x"],
        {"EVALLENS_EVAL_WATCH_INTERVAL_S": "1e308"},
        ["EVALLENS_EVAL_WATCH_INTERVAL_S", "less than or equal to 604800"],
    ),
    "negative eval seed": (
        ["eval", "run", "--set", "x"],
        {"EVALLENS_EVAL_SEED": "-1"},
        ["EVALLENS_EVAL_SEED", "greater than or equal to 0"],
    ),
    "infinite eval temperature": (
        ["eval", "run", "--set", "x"],
        {"EVALLENS_EVAL_TEMPERATURE": "inf"},
        ["EVALLENS_EVAL_TEMPERATURE", "finite number"],
    ),
    "eval max tokens past any model": (
        ["eval", "run", "--set", "x"],
        {"EVALLENS_EVAL_MAX_TOKENS": "1000000000000"},
        ["EVALLENS_EVAL_MAX_TOKENS: Input should be less than or equal to 1000000", "(got '1000000000000')"],
    ),
    "judge max tokens past any model": (
        ["gate", "--baseline", "main", "--candidate", "x"],
        {"EVALLENS_EVAL_JUDGE_MAX_TOKENS": "1000000000000"},
        ["EVALLENS_EVAL_JUDGE_MAX_TOKENS: Input should be less than or equal to 1000000"],
    ),
    # a bad candidate change too: it stops the demo at once, so without the bound the demo stops there,
    # having started nothing, rather than after starting every component
    "demo max tokens past any model": (
        ["demo", "--smoke", "--exit", "--no-dashboard"],
        {"EVALLENS_DEMO_EVAL_MAX_TOKENS": "1000000000000", "EVALLENS_DEMO_CANDIDATE_CHANGE": "bad"},
        [
            "EVALLENS_DEMO_EVAL_MAX_TOKENS: Input should be less than or equal to 1000000",
            "(got '1000000000000')",
        ],
    ),
    "eval runs --limit past a bigint": (
        ["eval", "runs", "--limit", "100000000000000000000"],
        {},
        ["--limit", "less than or equal to 9223372036854775807"],
    ),
    "--report-dir a file": (
        ["eval", "calibrate", "labels.jsonl", "--report-dir", sys.executable],
        {},
        ["--report-dir", "is a file"],
    ),
    "gate --report-dir a file": (
        ["gate", "--baseline", "main", "--candidate", "x", "--report-dir", sys.executable],
        {},
        ["--report-dir", "is a file"],
    ),
    "--out a folder": (
        ["eval", "sets", "export", "x", "--out", str(Path(sys.executable).parent)],
        {},
        ["--out", "is a directory"],
    ),
    "a status no case has": (
        ["cases", "list", "--set", "x", "--status", "needs-review"],
        {},
        ["--status", "'needs-review' is not one of", "'needs_review'"],
    ),
    "service config before the model is prepared": (
        ["service", "config"],
        {},
        ["no model at", "run `evallens model pull`"],
    ),
    "a body budget smaller than one body": (
        ["service"],
        {"EVALLENS_SERVICE_MAX_BODY_BYTES": "4096", "EVALLENS_SERVICE_MAX_BODY_BYTES_IN_FLIGHT": "2048"},
        ["EVALLENS_SERVICE_MAX_BODY_BYTES_IN_FLIGHT", "at least EVALLENS_SERVICE_MAX_BODY_BYTES (4096)"],
    ),
    "negative port": (
        ["service"],
        {"EVALLENS_SERVICE_PORT": "-1"},
        ["EVALLENS_SERVICE_PORT", "greater than or equal to"],
    ),
    # the gate words its own crashes as "gate failed: ..." (exit 2, never 1): a setting stays worded as main()
    # words it, the variable and its value, not "ValidationError: 1 validation error for EvalSettings"
    "a setting the gate reads": (
        ["gate", "--baseline", "main", "--candidate", "x"],
        {"EVALLENS_EVAL_CONCURRENCY": "abc"},
        ["EVALLENS_EVAL_CONCURRENCY: Input should be a valid integer", "(got 'abc')"],
    ),
    # a terminal in Latin-1: Python reads byte 0xff as the surrogate \udcff, which no database can store
    "an argument that is not UTF-8": (
        ["prices", "set", "caf\udcff", "--input", "1", "--output", "1"],
        {},
        ["the argument 'caf\\udcff' is not UTF-8 text"],
    ),
    # set but empty: Path("") is the current directory, where a command started a PostgreSQL cluster
    "an empty data dir": (
        ["keys", "list"],
        {"EVALLENS_DATA_DIR": ""},
        ["EVALLENS_DATA_DIR", "must name a directory, not be empty"],
    ),
    "a data dir that is a file": (
        ["keys", "list"],
        {"EVALLENS_DATA_DIR": __file__},
        [__file__, "File exists"],
    ),
}


@pytest.mark.parametrize("case", list(WITHOUT_DATABASE))
def test_mistakes_before_any_database_work(case: str, tmp_path: Path) -> None:
    args, env, expected = WITHOUT_DATABASE[case]
    result = run_cli(*args, env={"EVALLENS_DATA_DIR": str(tmp_path), **env})
    assert_one_line(result, *expected)
    assert "secret" not in result.stderr  # a URL that may hold a password is never echoed


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("latin1.yaml", "set: caf\xe9\n".encode("latin-1"), "not UTF-8 text (byte 8 is 0xe9)"),
        ("deep.yaml", DEEP_YAML.encode(), "nested too deeply"),
        ("control.yaml", b"set: x\ncases:\n  - id: a\x00b\n", "line 3 not valid YAML: character U+0000"),
        ("deep.jsonl", DEEP_JSONL.encode(), "line 1: nested too deeply"),
    ],
)
def test_unreadable_set_files(
    database_url: str, tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    (tmp_path / name).write_bytes(content)
    result = run_cli(
        "eval", "sets", "sync", str(tmp_path / name), env={"EVALLENS_DATABASE_URL": database_url}
    )
    assert_one_line(result, str(tmp_path / name), expected)


def test_a_setting_that_is_not_utf8_is_one_line(database_url: str) -> None:
    result = run_cli(
        "eval", "runs", env={"EVALLENS_DATABASE_URL": database_url, "EVALLENS_CASES_PROJECT": "p\udcff"}
    )
    assert_one_line(result, "'p\\udcff' is not UTF-8 text")


def test_ctrl_c_is_one_line_and_exit_130(tmp_path: Path) -> None:
    """Ctrl-C while a command waits (here: for a label file's writer) says so in one line, exit status 130."""
    fifo = tmp_path / "labels.jsonl"
    os.mkfifo(fifo)
    process = subprocess.Popen(
        [sys.executable, "-m", "evallens", "eval", "calibrate", str(fifo)],
        env=child_environment({"EVALLENS_DATA_DIR": str(tmp_path)}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal starts it
    )  # fmt: skip
    writer = open_when_read(fifo)  # held open: the command now waits in read() for a line
    try:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        os.close(writer)
    assert (process.returncode, stderr) == (130, "evallens: interrupted\n")


def open_when_read(fifo: Path) -> int:
    deadline = time.monotonic() + 120
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:  # ENXIO: no reader has opened it yet
            if error.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_export_into_a_missing_folder_is_refused(database_url: str, tmp_path: Path) -> None:
    out = tmp_path / "no-such-folder" / "set.yaml"
    result = run_cli(
        "eval", "sets", "export", "any", "--out", str(out), env={"EVALLENS_DATABASE_URL": database_url}
    )
    assert_one_line(result, "does not exist")
    assert not out.parent.exists()


def test_no_arguments_shows_the_help(tmp_path: Path) -> None:
    result = run_cli(env={"EVALLENS_DATA_DIR": str(tmp_path)})
    assert result.returncode == 0 and "Usage" in result.stdout and "collector" in result.stdout


@pytest.mark.parametrize(
    ("timeout", "sqlstate"),
    [("lock_timeout", "55P03"), ("statement_timeout", "57014")],
)
def test_a_database_timeout_says_postgresql_did_not_answer_in_time(
    database_url: str, timeout: str, sqlstate: str
) -> None:
    """A statement or lock timeout (a table locked by another client here) was worded as PostgreSQL
    refusing the command, as if retrying could not help: it did not answer in time."""
    with_timeout = make_url(database_url).update_query_dict({"options": f"-c {timeout}=200"})
    with psycopg.connect(database_url) as holder:
        holder.execute("LOCK TABLE eval_runs IN ACCESS EXCLUSIVE MODE")  # held until the block ends
        result = run_cli(
            "eval", "runs", env={"EVALLENS_DATABASE_URL": with_timeout.render_as_string(hide_password=False)}
        )
    assert_one_line(result, f"PostgreSQL did not answer in time (SQLSTATE {sqlstate}): ")
    assert "refused" not in result.stderr


def test_no_pooled_connection_free_in_time_is_worded_as_postgresql_not_answering(database_url: str) -> None:
    """A pool timeout (every connection held by statements that slow) was no error a command words: a
    traceback. It is PostgreSQL not answering in time, as for the service (``database_unavailable``)."""
    engine = create_db_engine(database_url, pool_size=1, pool_timeout_s=0.1)
    held = [engine.connect() for _ in range(1 + 10)]  # the pool, and SQLAlchemy's default overflow of 10
    try:
        with pytest.raises(PoolTimeout) as raised:
            engine.connect()
    finally:
        for connection in held:
            connection.close()
        engine.dispose()
    assert isinstance(raised.value, WORDED_ERRORS)
    line = one_line(raised.value)
    assert line.startswith("PostgreSQL did not answer in time: QueuePool limit of size 1 overflow 10 reached")
