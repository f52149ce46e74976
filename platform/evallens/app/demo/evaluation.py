"""Eval steps of the demo: sync the curated sets, replay them, tag the baseline, run the gate.

The demo drives the eval engine, so it imports ``evals`` inside these functions (never at import).
"""

import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml
from rich.console import Console
from sqlalchemy.orm import Session, sessionmaker

from evallens.progress import NO_PROGRESS, ProgressReporter, phase
from evallens.reports import GateReportBody
from evallens.runs import MAIN_TAG, latest_completed_run, tag_run
from evallens.settings import EvalSettings

SMOKE_SET_NAME = "acme-support-smoke"


def curated_sets_dir() -> Path:
    """The repository's curated Acme eval sets."""
    import evals

    return Path(evals.__file__).resolve().parent / "datasets" / "acme" / "sets"


def corpus_dir() -> Path:
    """The repository's demo knowledge base."""
    return curated_sets_dir().parent / "docs"


def write_smoke_sets(target: Path, cases_per_scenario: int) -> Path:
    """A small copy of the curated sets (the first cases of each scenario) for ``--smoke``."""
    target.mkdir(parents=True, exist_ok=True)
    for source in sorted(curated_sets_dir().glob("*.yaml")):
        content = yaml.safe_load(source.read_text())
        content["set"] = SMOKE_SET_NAME
        content["cases"] = content["cases"][:cases_per_scenario]
        (target / source.name).write_text(yaml.safe_dump(content, sort_keys=False, allow_unicode=True))
    return target


def sync_sets(sessions: sessionmaker[Session], path: Path) -> tuple[int, str, int]:
    """Store the sets under ``path``; returns (set version id, name, version) of the first set."""
    from evals.sets.sync import sync_path

    with sessions.begin() as session:
        report = sync_path(session, path, docs_dir=corpus_dir())
    synced = report.sets[0]
    return synced.eval_set_id, synced.name, synced.version


@dataclass(frozen=True)
class RunOutcome:
    """A run the demo made or reused."""

    run_id: uuid.UUID
    reused: bool


def target_fingerprint(service_url: str) -> str:
    """The fingerprint of the service's effective configuration."""
    return str(httpx.get(f"{service_url}/v1/config", timeout=30).json()["fingerprint"])


def scoring_description(settings: EvalSettings) -> dict[str, object]:
    """How a run made now with ``settings`` would be scored (``describe_scoring``)."""
    from evals.metrics.context import build_scoring_context, describe_scoring

    return describe_scoring(build_scoring_context(settings))


def completed_run(
    sessions: sessionmaker[Session],
    eval_set_id: int,
    fingerprint: str,
    scoring: dict[str, object],
    label: str,
) -> uuid.UUID | None:
    """The latest completed run of the set under ``label`` with this config fingerprint, scored the way
    ``scoring`` describes, if any."""
    with sessions() as session:
        run = latest_completed_run(session, eval_set_id, fingerprint, scoring=scoring, label=label)
        return None if run is None else run.id


def replay(
    sessions: sessionmaker[Session],
    eval_set_id: int,
    service_url: str,
    label: str,
    settings: EvalSettings,
    progress: ProgressReporter = NO_PROGRESS,
) -> RunOutcome:
    """Replay the set against the service, or reuse a completed run of the same set and config."""
    from evals.metrics.context import build_scoring_context, describe_scoring
    from evals.runner.run import run_eval

    with phase(progress, "loading the scoring models (MiniLM, judge, classifiers)"):
        scoring = build_scoring_context(settings, sessions=sessions)  # the demo's project is the default
    fingerprint = target_fingerprint(service_url)
    earlier = completed_run(sessions, eval_set_id, fingerprint, describe_scoring(scoring), label)
    if earlier is not None:
        return RunOutcome(earlier, reused=True)
    report = run_eval(
        sessions, eval_set_id, settings, scoring, endpoint=service_url, label=label, progress=progress
    )
    return RunOutcome(report.run_id, reused=False)


def tag_baseline(sessions: sessionmaker[Session], run_id: uuid.UUID, tag: str = MAIN_TAG) -> None:
    """Name the baseline run so the gate and the dashboard find it."""
    with sessions.begin() as session:
        tag_run(session, str(run_id), tag)


def gate(
    sessions: sessionmaker[Session], baseline: uuid.UUID, candidate: uuid.UUID, report_dir: Path
) -> GateReportBody:
    """Compare the candidate with the baseline, store the gate report and write its files."""
    from evals.gate import options_from_settings, run_gate

    options = options_from_settings(EvalSettings())  # the files are written before the verdict commits
    return run_gate(sessions, str(baseline), str(candidate), options, report_dir=report_dir).body


def print_gate(body: GateReportBody, console: Console) -> None:
    """The gate's terminal report on ``console``: quality and infra deltas, hints, verdict."""
    from evals.render import print_report

    print_report(body, console)
