"""Finding 7 of issue 14: every user mistake on the command line is exit code 2 and one readable line."""

import subprocess
import sys
from pathlib import Path

import pytest

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
