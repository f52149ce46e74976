"""Export a stored version to a set file; syncing that file maps back to the same version."""

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sqlalchemy.orm import Session, sessionmaker

from evallens import cases
from evallens.settings import child_environment
from evals.sets.export import export_set
from evals.sets.load import load_sets
from evals.sets.store import content_hash, find_set_version
from evals.sets.sync import sync_path
from tests.evallens.cases.conftest import SET_NAME, traffic
from tests.evallens.cases.traffic import Traffic
from tests.evals.conftest import SETS, run_cli

__all__ = ["traffic"]  # the fixture: the test set synced and production traffic stored


def test_a_synced_version_hashes_like_its_stored_cases(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    with sessions() as session:
        stored = find_set_version(session, SET_NAME)
        assert cases.version_hash(cases.set_cases(session, stored.id)) == stored.content_hash
    assert stored.content_hash == content_hash(load_sets(SETS / "good")[0])


@pytest.mark.parametrize("fmt", ["yaml", "jsonl"])
def test_export_then_sync_is_the_same_version(
    sessions: sessionmaker[Session], traffic: Traffic, tmp_path: Path, fmt: str
) -> None:
    with sessions.begin() as session:
        promoted = cases.promote_traces(
            session, [traffic.refusal], eval_set_name=SET_NAME, scenario="warranty", expected="decline"
        )
        out = tmp_path / f"exported.{fmt}"
        report = export_set(session, SET_NAME, fmt, out, "default")  # type: ignore[arg-type]
        assert (report.version, report.num_cases, report.num_left_out) == (promoted.version, 5, 0)
    with sessions.begin() as session:
        synced = sync_path(session, out, docs_dir=SETS / "docs").sets
    assert [(s.version, s.created) for s in synced] == [(promoted.version, False)]
    exported = {case.id: case for case in load_sets(out)[0].cases}
    assert exported[cases.case_key_for(traffic.refusal)].source_trace_id == traffic.refusal


def test_needs_review_cases_are_left_out(
    database_url: str, sessions: sessionmaker[Session], traffic: Traffic, tmp_path: Path
) -> None:
    with sessions.begin() as session:
        cases.promote_traces(session, [traffic.feedback], eval_set_name=SET_NAME, scenario="orders")
    out = tmp_path / "sets" / "mini.yaml"
    out.parent.mkdir()  # export writes into an existing folder, never creates one
    result = run_cli("eval", "sets", "export", f"{SET_NAME}@2", "--out", str(out), database_url=database_url)
    assert result.returncode == 0, result.stderr
    assert "4 cases" in result.stdout and "1 not active left out" in result.stdout
    document = yaml.safe_load(out.read_text())
    assert document["set"] == SET_NAME and len(document["cases"]) == 4
    with sessions.begin() as session:
        synced = sync_path(session, out, docs_dir=SETS / "docs").sets
    assert [(s.version, s.created) for s in synced] == [(1, False)]  # the active content is version 1's


def test_an_export_that_cannot_be_written_whole_leaves_the_file_as_it_was(
    database_url: str, tmp_path: Path
) -> None:
    """A file-size limit (as a full disk) cuts the write short: one line, exit 2, and the old file
    intact, never the first part of the set (which a later sync would store as a version of its own)."""
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    out = tmp_path / "mini.yaml"
    out.write_text("kept\n")
    limited = subprocess.run(
        [sys.executable, "-m", "evallens", "eval", "sets", "export", SET_NAME, "--out", str(out)],
        env=child_environment({"EVALLENS_DATABASE_URL": database_url}),
        capture_output=True, text=True, timeout=300,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200)),
    )  # fmt: skip
    assert limited.returncode == 2, limited.stderr
    assert limited.stderr.strip().splitlines() == [
        f"evallens: error: --out {out}: cannot write the file (File too large)"
    ]
    assert [path.name for path in tmp_path.iterdir()] == ["mini.yaml"] and out.read_text() == "kept\n"
    written = run_cli("eval", "sets", "export", SET_NAME, "--out", str(out), database_url=database_url)
    assert written.returncode == 0, written.stderr
    assert load_sets(out)[0].name == SET_NAME and out.stat().st_mode & 0o777 == 0o666 & ~_umask()
    unwritable = run_cli(
        "eval", "sets", "export", SET_NAME, "--out", "/proc/mini.yaml", database_url=database_url
    )  # fmt: skip
    assert unwritable.returncode == 2, unwritable.stderr
    [line] = unwritable.stderr.strip().splitlines()
    assert line.startswith("evallens: error: --out /proc/mini.yaml: cannot write the file (")


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
