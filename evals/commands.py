"""What the ``evallens eval`` and ``evallens gate`` commands do, each returning a typed result.

Every command reads and writes the sets, runs, tags and gates of one project: ``configured_project()``.
"""

from datetime import datetime
from pathlib import Path

from rich.console import Console

from evallens.db.sessions import open_sessions
from evallens.progress import NO_PROGRESS, ProgressReporter
from evallens.runs import check_tag, tag_run
from evallens.settings import CasesSettings, EvalSettings
from evals.compare import compare_runs
from evals.gate import GateOutcome, gate_endpoint, options_from_settings, run_gate
from evals.metrics.context import build_scoring_context
from evals.render import check_report_dir, print_report, write_reports
from evals.runner.run import RunReport, run_eval
from evals.sets.export import ExportFormat, ExportReport, export_set
from evals.sets.store import find_set_version
from evals.sets.sync import SyncReport, sync_path
from evals.watch import WatchOptions, WatchOutcome, watch


def configured_project() -> str:
    """The project whose sets and runs every eval command uses (``EVALLENS_CASES_PROJECT``), the one the
    ``cases`` commands promote into, so that a promoted case can be replayed and a synced set exported."""
    return CasesSettings().cases_project


def sync_command(path: Path, docs_dir: Path | None, endpoint: str | None) -> SyncReport:
    """Load, check and store every set under ``path``."""
    settings = EvalSettings()
    with open_sessions() as sessions, sessions.begin() as session:
        return sync_path(
            session, path, docs_dir=docs_dir or settings.eval_docs_dir, endpoint=endpoint,
            api_key=settings.eval_api_key, project=configured_project(),
        )  # fmt: skip


def run_command(
    selector: str,
    endpoint: str | None,
    repeats: int,
    label: str | None,
    *,
    no_cache: bool = False,
    tag: str | None = None,
    progress: ProgressReporter = NO_PROGRESS,
) -> RunReport:
    """Replay a stored set (``name`` or ``name@version``) once; ``tag`` names the completed run."""
    settings, project = EvalSettings(), configured_project()
    if tag is not None:  # before the replay, not after it
        check_tag(tag)
    with open_sessions() as sessions:
        with sessions() as session:
            eval_set_id = find_set_version(session, selector, project=project).id
        scoring = build_scoring_context(settings, sessions=sessions, project=project)
        report = run_eval(
            sessions, eval_set_id, settings, scoring, endpoint=endpoint, repeats=repeats, label=label,
            no_cache=no_cache, progress=progress,
        )  # fmt: skip
        if tag is not None:
            with sessions.begin() as session:
                tag_run(session, str(report.run_id), tag, project=project)
        return report


def compare_command(baseline: str, candidate: str, report_dir: Path | None, console: Console) -> GateOutcome:
    """Compare two runs, print the tables and hints, and optionally write the report files."""
    if report_dir is not None:
        check_report_dir(report_dir)
    with open_sessions() as sessions, sessions.begin() as session:
        body = compare_runs(
            session, baseline, candidate, options_from_settings(EvalSettings()), project=configured_project()
        )
    print_report(body, console)
    if report_dir is not None:
        write_reports(body, report_dir)
    return GateOutcome(body=body, gate_report_id=0)


def gate_command(
    baseline: str,
    candidate: str | None,
    endpoint: str | None,
    report_dir: Path | None,
    console: Console,
    *,
    no_cache: bool = False,
    progress: ProgressReporter = NO_PROGRESS,
) -> GateOutcome:
    """Gate a stored candidate run, or a run made now against ``endpoint``; print and write reports (written
    before the verdict is stored: a failed write stores none)."""
    settings, project = EvalSettings(), configured_project()
    if report_dir is not None:  # before a replay that a folder for no reports would waste
        check_report_dir(report_dir)
    with open_sessions() as sessions:
        if endpoint is not None:
            scoring = build_scoring_context(settings, sessions=sessions, project=project)
            outcome = gate_endpoint(
                sessions, baseline, endpoint, settings, scoring, no_cache=no_cache, progress=progress,
                project=project, report_dir=report_dir,
            )  # fmt: skip
        else:
            outcome = run_gate(
                sessions, baseline, candidate or "", options_from_settings(settings), project=project,
                report_dir=report_dir,
            )  # fmt: skip
    print_report(outcome.body, console)
    return outcome


def export_command(selector: str, fmt: ExportFormat, out: Path) -> ExportReport:
    """Write a stored set version (``NAME`` or ``NAME@VERSION``) to a set file."""
    with open_sessions() as sessions, sessions() as session:
        return export_set(session, selector, fmt, out, configured_project())


def tag_command(run: str, tag: str) -> str:
    """Point ``tag`` at ``run``; returns the run id."""
    with open_sessions() as sessions, sessions.begin() as session:
        return str(tag_run(session, run, tag, project=configured_project()).run.id)


def watch_command(options: WatchOptions, console: Console) -> WatchOutcome:
    """Poll, replay and gate until interrupted (or a limit in ``options``); one line per event."""
    settings = EvalSettings()
    with open_sessions() as sessions:
        scoring = build_scoring_context(settings, sessions=sessions, project=options.project)

        def emit(message: str) -> None:
            console.print(
                f"{datetime.now():%H:%M:%S} {message}", markup=False, highlight=False, soft_wrap=True
            )

        return watch(sessions, settings, scoring, options, on_event=emit)
