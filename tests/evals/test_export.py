"""Export a stored version to a set file; syncing that file maps back to the same version."""

from pathlib import Path

import pytest
import yaml
from sqlalchemy.orm import Session, sessionmaker

from evallens import cases
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
