"""Every ``eval``, ``gate`` and ``cases`` command reads and writes the sets and runs of one project,
``EVALLENS_CASES_PROJECT``: a set synced there can be exported and promoted into, the promoted version
replayed, tagged, compared, gated and watched there, and nothing lands in the default project."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalRun, EvalSet, EvalTag, GateReport
from evallens.db.partitions import create_span_partitions
from tests.evals.conftest import SETS, ScriptedTarget, run_cli
from tests.evals.test_tenancy import question, span

ACME = {"EVALLENS_CASES_PROJECT": "acme"}
SET_NAME = "mini-support"
TENT_TRACE = "7e" * 16


def acme_cli(*args: str, database_url: str) -> str:
    """Run a command as project acme; its stdout (the test fails with stderr when it does)."""
    result = run_cli(*args, database_url=database_url, extra_env=ACME)
    assert result.returncode == 0, f"{args}: {result.stderr}"
    return result.stdout


def stored_projects(sessions: sessionmaker[Session]) -> set[str]:
    """The projects of every stored set, run, tag and gate report."""
    with sessions() as session:
        return {
            *session.scalars(select(EvalSet.project)),
            *session.scalars(select(EvalRun.project)),
            *session.scalars(select(EvalTag.project)),
            *session.scalars(select(GateReport.project)),
        }


def test_a_set_synced_in_the_project_is_exported_from_it(
    database_url: str, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    acme_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url)
    out = tmp_path / "exported.yaml"
    exported = acme_cli("eval", "sets", "export", SET_NAME, "--out", str(out), database_url=database_url)
    assert f"{SET_NAME} v1: 4 cases" in exported
    assert len(yaml.safe_load(out.read_text())["cases"]) == 4
    docs = str(SETS / "docs")
    again = acme_cli("eval", "sets", "sync", str(out), "--docs", docs, database_url=database_url)
    assert f"{SET_NAME}: version 1 (unchanged, 4 cases)" in again
    assert stored_projects(sessions) == {"acme"}


def test_a_promoted_set_is_replayed_tagged_compared_gated_and_watched_in_the_project(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget
) -> None:
    now = datetime.now(UTC)
    with sessions.begin() as session:
        create_span_partitions(session.connection(), [now.date(), (now - timedelta(days=1)).date()])
        tent = span("acme", TENT_TRACE, "0" * 15 + "1", attributes=question("What is the warranty on tents?"))
        session.add(tent)
    acme_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url)
    promoted = acme_cli(
        "cases", "promote", TENT_TRACE, "--set", SET_NAME, "--scenario", "warranty", "--expected", "decline",
        database_url=database_url,
    )  # fmt: skip
    assert f"{SET_NAME}: version 2 with 1 promoted case(s)" in promoted
    url = scripted_target.url
    ran = acme_cli("eval", "run", "--set", SET_NAME, "--endpoint", url, "--tag", "main", "--json",
                   database_url=database_url)  # fmt: skip
    baseline = json.loads(ran)
    assert (baseline["version"], baseline["summary"]["num_cases"]) == (2, 5)  # the promoted version
    candidate = json.loads(
        acme_cli("eval", "run", "--set", SET_NAME, "--endpoint", url, "--json", database_url=database_url)
    )["run_id"]
    listed = json.loads(acme_cli("eval", "runs", "--format", "json", database_url=database_url))
    assert {item["run_id"] for item in listed} == {baseline["run_id"], candidate}
    acme_cli("eval", "tag", candidate, "release", database_url=database_url)
    compared = acme_cli("eval", "compare", "main", "release", database_url=database_url)
    assert f"baseline {baseline['run_id'][:8]} vs candidate {candidate[:8]}" in compared
    gated = json.loads(
        acme_cli("gate", "--baseline", "main", "--candidate", candidate, "--json", database_url=database_url)
    )
    assert (gated["baseline_run_id"], gated["candidate_run_id"]) == (baseline["run_id"], candidate)
    watched = acme_cli(
        "eval", "watch", "--set", SET_NAME, "--endpoint", url, "--settle", "0", "--max-polls", "1",
        database_url=database_url,
    )  # fmt: skip
    assert "already evaluated by run" in watched
    assert stored_projects(sessions) == {"acme"}
