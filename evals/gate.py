"""The CI gate: compare a candidate with a baseline, store the verdict, say which exit code it means."""

import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import GateReport
from evallens.db.models.traces import DEFAULT_PROJECT
from evallens.progress import NO_PROGRESS, ProgressReporter
from evallens.reports import GateReportBody
from evallens.runs import resolve_run
from evallens.settings import EvalSettings
from evals.compare import ComparisonOptions, compare_runs, require_same_scoring
from evals.errors import ScoredDifferently
from evals.metrics.context import describe_scoring, require_judge_model
from evals.metrics.result import ScoringContext
from evals.render import reports_taken_back_on_error, write_reports
from evals.runner.run import run_eval

EXIT_PASS = 0
EXIT_REGRESSION = 1


@dataclass(frozen=True)
class GateOutcome:
    """The report, the id of its ``gate_reports`` row and the exit code it means."""

    body: GateReportBody
    gate_report_id: int

    @property
    def exit_code(self) -> int:
        """0 pass, 1 regression."""
        return EXIT_REGRESSION if self.body.verdict == "regression" else EXIT_PASS


def options_from_settings(settings: EvalSettings) -> ComparisonOptions:
    """The statistical knobs of the gate from the settings."""
    return ComparisonOptions(
        min_effect=settings.eval_min_effect,
        alpha=settings.eval_alpha,
        power=settings.eval_power,
        resamples=settings.eval_permutation_resamples,
        seed=settings.eval_seed,
    )


def run_gate(
    session_factory: sessionmaker[Session],
    baseline: str,
    candidate: str,
    options: ComparisonOptions,
    *,
    project: str = DEFAULT_PROJECT,
    report_dir: Path | None = None,
) -> GateOutcome:
    """Compare two stored runs of ``project`` and store a ``gate_reports`` row with the full report.

    With ``report_dir``, the report files are written there before the verdict commits: a write that
    fails (a full disk, a folder gone read-only) stores no verdict, so no stored verdict lacks its files;
    a commit that fails (the database refused it or went away) takes the files back, so no file states a
    verdict that was never stored.
    """
    with reports_taken_back_on_error(report_dir), session_factory.begin() as session:
        body = compare_runs(session, baseline, candidate, options, project=project)
        row = GateReport(
            project=project,
            eval_set_name=body.eval_set_name,
            baseline_run_id=uuid.UUID(body.baseline_run_id),
            candidate_run_id=uuid.UUID(body.candidate_run_id),
            verdict=body.verdict,
            report=body.model_dump(mode="json"),
        )
        session.add(row)
        session.flush()
        if report_dir is not None:
            write_reports(body, report_dir)  # raises, and the verdict rolls back with the transaction
        outcome = GateOutcome(body=body, gate_report_id=row.id)
    return outcome


def gate_endpoint(
    session_factory: sessionmaker[Session],
    baseline: str,
    endpoint: str,
    settings: EvalSettings,
    scoring: ScoringContext,
    *,
    progress: ProgressReporter = NO_PROGRESS,
    no_cache: bool = False,
    project: str = DEFAULT_PROJECT,
    report_dir: Path | None = None,
) -> GateOutcome:
    """Replay the baseline's exact set version (of ``project``) against ``endpoint`` now, then gate
    that run (``run_gate``: reports written into ``report_dir`` before the verdict commits)."""
    with session_factory() as session:
        ref = resolve_run(session, baseline, project=project)
        eval_set_id = ref.run.eval_set_id
        repeats = ref.run.repeats
        # before the replay, not after it: a baseline scored otherwise would make the replay a waste
        try:
            require_same_scoring(ref.run, describe_scoring(scoring), "a run scored now", ref.eval_set.name)
        except ScoredDifferently:
            require_judge_model(scoring)  # a judge that is down only looks like another judge
            raise
    report = run_eval(
        session_factory, eval_set_id, settings, scoring, endpoint=endpoint, repeats=repeats,
        label="gate candidate", progress=progress, no_cache=no_cache,
    )  # fmt: skip
    return run_gate(
        session_factory, str(ref.run.id), str(report.run_id), options_from_settings(settings),
        project=project, report_dir=report_dir,
    )  # fmt: skip
