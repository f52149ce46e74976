"""``evallens eval watch``: replay and gate on every change of the target's configuration.

Each poll waits for a ready target and a stable fingerprint (the same on two reads ``settle_s``
apart, ready before and after each read). A fingerprint that a completed run already evaluated is
not replayed, but that run is gated (unless it is the baseline): it may have been made without the
watch, and never gated. A failed run (target down, too many errors) does not count, so the next ready
poll tries again. Every completed run is gated against the baseline tag.
"""

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from evallens.credentials import masked_url
from evallens.db.models.traces import DEFAULT_PROJECT
from evallens.errors import EvallensError
from evallens.reports import GateReportBody
from evallens.runs import MAIN_TAG, RunNotFound, latest_completed_run, resolve_run
from evallens.settings import EvalSettings
from evals.errors import EndpointUnreachable, NothingCompared, ScoredDifferently
from evals.gate import GateOutcome, options_from_settings, run_gate
from evals.metrics.context import describe_scoring, require_judge_model
from evals.metrics.result import ScoringContext
from evals.render import check_report_dir
from evals.runner.run import RunReport, run_eval
from evals.sets.store import find_set_version
from evals.target import check_url, fetch_target_config
from evals.watch.notify import check_webhook, is_webhook, notify_regression
from evals.watch.probe import Probe, probe, watched_fingerprint

EXIT_REGRESSION = 1


@dataclass(frozen=True)
class WatchOptions:
    """What to watch, how often, and what to do with each verdict."""

    endpoint: str
    set_selectors: tuple[str, ...]
    baseline: str = MAIN_TAG
    interval_s: float = 30.0
    settle_s: float = 5.0
    ready_url: str | None = None
    config_file: Path | None = None
    max_polls: int | None = None
    max_runs: int | None = None
    report_dir: Path | None = None
    exit_on_regression: bool = False
    on_regression: str | None = None
    no_cache: bool = False
    repeats: int = 1
    project: str = DEFAULT_PROJECT  # whose sets are replayed, and whose runs and gates are stored


@dataclass
class WatchOutcome:
    """What the watch did: completed runs, failed runs' reasons, gate verdicts, and its exit code."""

    runs: list[RunReport] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    gates: list[GateOutcome] = field(default_factory=list)
    exit_code: int = 0

    @property
    def num_started(self) -> int:
        """Replays started, completed or not."""
        return len(self.runs) + len(self.failures)


Emit = Callable[[str], None]


@dataclass
class _State:
    handled: str | None = None  # the fingerprint every set has a completed (or earlier) run for
    status: str = ""  # the last readiness message shown, so a waiting target is reported once
    was_down: bool = False


def watch(
    session_factory: sessionmaker[Session],
    settings: EvalSettings,
    scoring: ScoringContext,
    options: WatchOptions,
    *,
    on_event: Emit = lambda _: None,
    sleep: Callable[[float], None] = time.sleep,
) -> WatchOutcome:
    """Poll until ``max_polls`` polls, ``max_runs`` replays or a regression with ``exit_on_regression``."""
    check_url(options.endpoint, "the target")
    if options.ready_url is not None:
        check_url(options.ready_url, "--ready-url")
    if options.on_regression is not None and is_webhook(options.on_regression):
        check_webhook(options.on_regression)  # its path or query may hold its secret: never shown
    if options.report_dir is not None:
        check_report_dir(options.report_dir)
    if options.config_file is not None:  # a mistyped path is an error now; a file missing later is waited for
        watched_fingerprint(options.endpoint, options.config_file)
    with session_factory() as session:
        for selector in options.set_selectors:
            # an unknown set is an error now, not at the first change
            find_set_version(session, selector, project=options.project)
    outcome, state, polls = WatchOutcome(), _State(), 0
    while True:
        polls += 1
        _poll(session_factory, settings, scoring, options, state, outcome, on_event, sleep)
        if outcome.exit_code or _limit_reached(options, polls, outcome):
            return outcome
        sleep(options.interval_s)


def _limit_reached(options: WatchOptions, polls: int, outcome: WatchOutcome) -> bool:
    if options.max_runs is not None and outcome.num_started >= options.max_runs:
        return True
    return options.max_polls is not None and polls >= options.max_polls


def _poll(
    session_factory: sessionmaker[Session],
    settings: EvalSettings,
    scoring: ScoringContext,
    options: WatchOptions,
    state: _State,
    outcome: WatchOutcome,
    emit: Emit,
    sleep: Callable[[float], None],
) -> None:
    seen = _look(options, settings)
    if seen.fingerprint is None:
        _report_status(state, f"waiting: {seen.detail}", emit)
        state.was_down = True
        return
    if seen.fingerprint == state.handled:
        if state.was_down:
            emit(f"target ready again; config fingerprint {seen.fingerprint} unchanged: nothing to replay")
        state.was_down, state.status = False, ""
        return
    sleep(options.settle_s)
    again = _look(options, settings)
    if again.fingerprint != seen.fingerprint:
        _report_status(
            state, f"waiting: config still changing ({seen.fingerprint} -> {again.fingerprint})", emit
        )
        return
    try:  # runs scored by a judge of unknown model could be neither reused nor gated
        require_judge_model(scoring)
    except EndpointUnreachable as error:
        _report_status(state, f"waiting: {error}", emit)
        return
    state.was_down, state.status = False, ""
    emit(f"target ready, config fingerprint {seen.fingerprint} (stable for {options.settle_s:g} s)")
    if _evaluate_sets(session_factory, settings, scoring, options, outcome, emit):
        state.handled = seen.fingerprint


def _look(options: WatchOptions, settings: EvalSettings) -> Probe:
    return probe(options.endpoint, options.ready_url, options.config_file, settings.eval_api_key)


def _report_status(state: _State, message: str, emit: Emit) -> None:
    if message != state.status:
        emit(message)
        state.status = message


def _evaluate_sets(
    session_factory: sessionmaker[Session],
    settings: EvalSettings,
    scoring: ScoringContext,
    options: WatchOptions,
    outcome: WatchOutcome,
    emit: Emit,
) -> bool:
    """Replay and gate every set this fingerprint has not been evaluated on (by today's metrics); True
    when all now have."""
    all_done = True
    scored_as = describe_scoring(scoring)
    seen: set[int] = set()  # a version named twice (--set a --set a, or a and a@<its latest>) runs once
    for selector in options.set_selectors:
        if outcome.exit_code or _limit_reached(options, 0, outcome):
            return False
        try:
            target_fingerprint = fetch_target_config(
                options.endpoint, api_key=settings.eval_api_key
            ).fingerprint
            with session_factory() as session:
                eval_set = find_set_version(session, selector, project=options.project)
                if eval_set.id in seen:
                    continue
                seen.add(eval_set.id)
                earlier = latest_completed_run(session, eval_set.id, target_fingerprint, scoring=scored_as)
            if earlier is not None:
                emit(
                    f"{eval_set.name} v{eval_set.version}: fingerprint {target_fingerprint} already "
                    f"evaluated by run {earlier.id}: not replaying"
                )
                if not _is_baseline(session_factory, options, earlier.id, eval_set.name):
                    # a run made without the watch (`eval run`) may never have been gated
                    _gate(session_factory, settings, options, earlier.id, eval_set.name, outcome, emit)
                continue
            emit(f"{eval_set.name} v{eval_set.version}: replaying against {masked_url(options.endpoint)}")
            report = run_eval(
                session_factory, eval_set.id, settings, scoring, endpoint=options.endpoint,
                repeats=options.repeats, label=f"watch {target_fingerprint}",
                no_cache=options.no_cache,
            )  # fmt: skip
        except EvallensError as error:
            outcome.failures.append(str(error))
            emit(f"{selector}: {error}; not counted as an evaluation, will replay when the target is ready")
            all_done = False
            continue
        outcome.runs.append(report)
        emit(_run_line(report))
        _gate(session_factory, settings, options, report.run_id, report.eval_set_name, outcome, emit)
    return all_done


def _is_baseline(
    session_factory: sessionmaker[Session], options: WatchOptions, run_id: uuid.UUID, eval_set_name: str
) -> bool:
    """Whether the run is the one the watch gates against (gating it against itself says nothing)."""
    with session_factory() as session:
        try:
            ref = resolve_run(session, options.baseline, eval_set_name=eval_set_name, project=options.project)
        except RunNotFound:
            return False
    return ref.run.id == run_id


def _run_line(report: RunReport) -> str:
    figures = ", ".join(f"{name} {estimate.mean:.3f}" for name, estimate in report.summary.overall.items())
    cache, cached = report.summary.cache, ""
    if cache is not None:
        cached = f"; cache hits {cache.num_exact_hits} exact, {cache.num_semantic_hits} semantic"
        cached += f" of {cache.num_answers} answers"
    return f"run {report.run_id} completed: {figures}; {report.summary.num_errors} failed requests{cached}"


def _gate(
    session_factory: sessionmaker[Session],
    settings: EvalSettings,
    options: WatchOptions,
    run_id: uuid.UUID,
    eval_set_name: str,
    outcome: WatchOutcome,
    emit: Emit,
) -> None:
    report_dir = None
    if options.report_dir is not None:
        report_dir = options.report_dir / f"{folder_name(eval_set_name)}-{str(run_id)[:8]}"
    try:
        gated = run_gate(
            session_factory, options.baseline, str(run_id), options_from_settings(settings),
            project=options.project, report_dir=report_dir,
        )  # fmt: skip
    except RunNotFound as error:
        emit(
            f"not gated: {error} for set {eval_set_name} (name a baseline with "
            f"`evallens eval tag RUN {options.baseline}`)"
        )
        return
    except (ScoredDifferently, NothingCompared) as error:  # the person's to fix; the watch goes on
        emit(f"not gated: {error}")
        return
    outcome.gates.append(gated)
    body = gated.body
    for line in verdict_lines(body, options.baseline):
        emit(line)
    if report_dir is not None:
        emit(f"reports written to {report_dir}")
    if body.verdict != "regression":
        return
    if options.on_regression:
        emit(notify_regression(options.on_regression, body, report_dir))
    if options.exit_on_regression:
        outcome.exit_code = EXIT_REGRESSION


def folder_name(eval_set_name: str) -> str:
    """The set's name as one folder name: a name such as 'team/returns' or '../x' stays inside the
    report folder."""
    return re.sub(r"[^\w.-]", "_", eval_set_name).replace("..", "__")


def verdict_lines(body: GateReportBody, baseline: str) -> list[str]:
    """The verdict, each regressed cell and each hint, one line each."""
    lines = [f"gate vs {baseline} (run {body.baseline_run_id[:8]}): verdict {body.verdict}"]
    for c in body.comparisons:
        if c.regression:
            lines.append(
                f"  regression: {c.scenario} {c.metric} {c.baseline:.3f} -> {c.candidate:.3f} "
                f"({c.delta * 100:+.1f} points, adjusted p {c.p_adjusted:.4f})"
            )
    lines += [f"  hint: {hint.message}" for hint in body.hints]
    return lines
