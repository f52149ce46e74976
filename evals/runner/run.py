"""``evallens eval run``: replay one stored set version against a target and store everything."""

import signal
import subprocess
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from evallens.credentials import masked_url
from evallens.db.models import EvalResult, EvalRun, EvalSet
from evallens.progress import NO_PROGRESS, ProgressReporter, phase
from evallens.reports import CacheCounts, MetricName, RunSummary
from evallens.runs import hold_run_lock
from evallens.settings import EvalSettings
from evallens.signals import signals_held
from evals.errors import EndpointUnreachable, EvalSetError, RunFailed
from evals.infra import await_spans, compute_infra
from evals.metrics import score_cases
from evals.metrics.context import describe_scoring
from evals.metrics.result import Answer, MetricResult, ScoringContext
from evals.runner.replay import ReplayedCase, ReplayOptions, replay
from evals.scoring import average_repeats, summarize
from evals.sets.format import CaseSpec
from evals.sets.store import case_spec, load_cases
from evals.target import TargetConfig, api_url, fetch_target_config, first_model_id


@dataclass(frozen=True)
class RunReport:
    """The outcome of one run."""

    run_id: uuid.UUID
    eval_set_name: str
    eval_set_version: int
    endpoint: str  # as stored and shown: its credentials masked
    config_fingerprint: str
    summary: RunSummary


def run_eval(
    session_factory: sessionmaker[Session],
    eval_set_id: int,
    settings: EvalSettings,
    scoring: ScoringContext,
    *,
    endpoint: str | None = None,
    repeats: int = 1,
    label: str | None = None,
    progress: ProgressReporter = NO_PROGRESS,
    no_cache: bool = False,
) -> RunReport:
    """Replay the set version ``eval_set_id``; the run ends ``completed``, or ``failed`` and re-raises.

    An unreachable target raises ``EndpointUnreachable`` before any run is stored. When more than
    ``eval_max_error_rate`` of the requests fail, the run is stored as failed and ``RunFailed`` raised.
    ``no_cache`` asks the target not to answer from its response caches; ``progress`` hears of every
    request, the scoring and the wait for the target's spans.
    """
    target_url = endpoint or settings.eval_endpoint
    with session_factory() as session:
        eval_set = session.get_one(EvalSet, eval_set_id)
        stored_cases = load_cases(session, eval_set_id)
        cases = [case_spec(case) for case in stored_cases]
        case_ids = {case.case_key: case.id for case in stored_cases}
    if not cases:
        raise EvalSetError(f"eval set '{eval_set.name}' version {eval_set.version} has no active cases")
    target = fetch_target_config(target_url, api_key=settings.eval_api_key)
    model = settings.eval_model or first_model_id(target.config) or resolve_model(target_url, settings)
    # held from before the run is stored until after its end is stored: see evallens.runs.liveness
    with hold_run_lock(session_factory) as run_id:
        _start_run(
            session_factory, run_id, eval_set, target_url, target, label, repeats, settings,
            describe_scoring(scoring),
        )  # fmt: skip
        options = ReplayOptions(
            endpoint=target_url,
            model=model,
            run_id=str(run_id),
            concurrency=settings.eval_concurrency,
            repeats=repeats,
            timeout_s=settings.eval_request_timeout_s,
            temperature=settings.eval_temperature,
            max_tokens=settings.eval_max_tokens,
            api_key=settings.eval_api_key,
            no_cache=no_cache,
        )
        try:
            summary = _replay_and_store(
                session_factory, options, eval_set.project, cases, case_ids, settings, scoring, progress
            )
        except BaseException as error:
            with signals_held():  # a second Ctrl-C must not leave the run 'running' forever
                _fail_run(session_factory, run_id, error)
            raise
    return RunReport(
        run_id, eval_set.name, eval_set.version, masked_url(target_url), target.fingerprint, summary
    )


def _replay_and_store(
    session_factory: sessionmaker[Session],
    options: ReplayOptions,
    project: str,
    cases: list[CaseSpec],
    case_ids: dict[str, int],
    settings: EvalSettings,
    scoring: ScoringContext,
    progress: ProgressReporter,
) -> RunSummary:
    """Replay, score, wait for the target's spans and store the run as completed; raises on a failure."""
    run_id = uuid.UUID(options.run_id)
    replayed = _replay_with_progress(cases, options, progress)
    replay_ended = datetime.now(UTC)
    if all(item.completion.connection_failed for item in replayed):
        raise EndpointUnreachable(
            f"the target at {masked_url(options.endpoint)} stopped answering during the run"
        )
    _check_error_rate(run_id, replayed, settings.eval_max_error_rate)
    with phase(progress, f"scoring {len(replayed)} answers"):
        results = _score(replayed, scoring)  # embeddings and judge calls, outside any transaction
    scored_as = describe_scoring(scoring)  # the judge's model is known now if it was down at the start
    traces = [item.completion.trace_id for item in replayed if item.completion.trace_id]
    with phase(progress, f"waiting for the spans of {len(traces)} traces"):
        await_spans(session_factory, options.run_id, project, traces, settings.eval_span_wait_s)
    with session_factory.begin() as session:
        _lock_running_run(session, run_id)
        cache = cache_counts(replayed, options.no_cache)
        summary = _store(session, run_id, replayed, results, case_ids, settings, replay_ended, cache)
        session.get_one(EvalRun, run_id).scoring = scored_as
    return summary


def _lock_running_run(session: Session, run_id: uuid.UUID) -> EvalRun:
    """The run, its row locked until the transaction ends; ``RunFailed`` unless it is still 'running'.

    Another process may have stored it as failed meanwhile (``fail_abandoned_runs``, when a pooler in
    transaction mode made its lock look free): its end is never written over that.
    """
    run = session.get_one(EvalRun, run_id, with_for_update=True, populate_existing=True)
    if run.status != "running":
        raise RunFailed(
            str(run_id),
            f"another process marked it {run.status} while it ran ('{run.error or 'no reason given'}'), so "
            "its answers were not stored; behind a pooler in transaction mode a live run looks abandoned "
            "(use session mode)",
        )
    return run


def cache_counts(replayed: list[ReplayedCase], bypassed: bool) -> CacheCounts:
    """How many answers the target marked as served from its exact and semantic caches."""
    return CacheCounts(
        num_answers=len(replayed),
        num_exact_hits=sum(1 for item in replayed if item.completion.exact_cache_hit),
        num_semantic_hits=sum(1 for item in replayed if item.completion.semantic_cache_hit),
        bypassed=bypassed,
    )


def _check_error_rate(run_id: uuid.UUID, replayed: list[ReplayedCase], limit: float) -> None:
    """A run with too many failed requests measured the target's outage, not its answers."""
    failed = [item.completion.error for item in replayed if item.completion.error is not None]
    if not replayed or len(failed) <= limit * len(replayed):
        return
    share = len(failed) / len(replayed)
    raise RunFailed(
        str(run_id),
        f"{len(failed)} of {len(replayed)} requests failed ({share:.0%}, over the {limit:.0%} limit); "
        f"first: {failed[0]}",
    )


def resolve_model(endpoint: str, settings: EvalSettings) -> str:
    """The first model the target lists under ``/v1/models``."""
    headers = {"authorization": f"Bearer {settings.eval_api_key}"} if settings.eval_api_key else {}
    try:
        response = httpx.get(api_url(endpoint, "/models"), timeout=10.0, headers=headers)
        models = response.json().get("data") or []
        return str(models[0]["id"])
    except (httpx.HTTPError, ValueError, LookupError, AttributeError, TypeError):
        raise EndpointUnreachable(
            f"{masked_url(endpoint)} lists no model under /v1/models; set EVALLENS_EVAL_MODEL"
        ) from None


def _start_run(
    session_factory: sessionmaker[Session],
    run_id: uuid.UUID,
    eval_set: EvalSet,
    endpoint: str,
    target: TargetConfig,
    label: str | None,
    repeats: int,
    settings: EvalSettings,
    scoring: dict[str, object],
) -> None:
    run = EvalRun(
        id=run_id,
        project=eval_set.project,
        eval_set_id=eval_set.id,
        label=label,
        endpoint=masked_url(endpoint),  # shown by `eval runs`, reports and the dashboard; sent nowhere
        config=target.config,
        config_fingerprint=target.fingerprint,
        git_sha=settings.eval_git_sha or current_git_sha(),
        scoring=scoring,
        status="running",
        repeats=repeats,
        started_at=datetime.now(UTC),
    )
    with session_factory.begin() as session:
        session.add(run)


def _replay_with_progress(
    cases: list[CaseSpec], options: ReplayOptions, progress: ProgressReporter
) -> list[ReplayedCase]:
    repeats = f" x{options.repeats}" if options.repeats > 1 else ""
    with phase(progress, f"replaying {len(cases)} cases{repeats}", len(cases) * options.repeats):
        return replay(cases, options, on_done=lambda item: progress.advance(
            failed=item.completion.error is not None, detail=item.case.scenario
        ))  # fmt: skip


def _score(replayed: list[ReplayedCase], scoring: ScoringContext) -> list[dict[MetricName, MetricResult]]:
    answers = [
        Answer(
            text=item.completion.text,
            retrieved_ids=item.completion.retrieved_ids,
            error=item.completion.error,
        )
        for item in replayed
    ]
    return score_cases([(item.case, answer) for item, answer in zip(replayed, answers, strict=True)], scoring)


def _store(
    session: Session,
    run_id: uuid.UUID,
    replayed: list[ReplayedCase],
    scored: list[dict[MetricName, MetricResult]],
    case_ids: dict[str, int],
    settings: EvalSettings,
    replay_ended: datetime,
    cache: CacheCounts,
) -> RunSummary:
    run = session.get_one(EvalRun, run_id)
    rows = []
    num_unscored: Counter[str] = Counter()
    for item, results in zip(replayed, scored, strict=True):
        scores: dict[str, float] = {name: r.score for name, r in results.items() if r.score is not None}
        num_unscored.update(name for name, r in results.items() if r.unscored)
        session.add(_result_row(run, case_ids[item.case.id], item, scores, results))
        rows.append((item.case.id, item.case.scenario, scores))
    num_errors = sum(1 for item in replayed if item.completion.error is not None)
    summary = summarize(
        average_repeats(rows),
        num_errors=num_errors,
        num_unscored=dict(num_unscored),
        resamples=settings.eval_bootstrap_resamples,
        seed=settings.eval_seed,
    )
    summary.cache = cache
    run.finished_at = replay_ended
    session.flush()
    run.summary = summary.model_dump(mode="json")
    # once, now that the spans the target sent are in: comparisons read it, never recompute it
    run.infra = compute_infra(session, run).model_dump(mode="json")
    run.status = "completed"
    return summary


def _result_row(
    run: EvalRun,
    case_id: int,
    item: ReplayedCase,
    scores: dict[str, float],
    results: dict[MetricName, MetricResult],
) -> EvalResult:
    completion = item.completion
    return EvalResult(
        run_id=run.id,
        eval_set_id=run.eval_set_id,  # the case is of the run's set: case_ids came from it
        case_id=case_id,
        repeat=item.repeat,
        response=storable(completion.text),
        retrieved_ids=completion.retrieved_ids,
        scores=scores,
        passed={name: r.passed for name, r in results.items() if r.passed is not None},
        unscored={name: r.reason for name, r in results.items() if r.unscored},
        latency_ms=completion.latency_ms,
        ttft_ms=completion.ttft_ms,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        exact_cache_hit=completion.exact_cache_hit,
        semantic_cache_hit=completion.semantic_cache_hit,
        degraded=completion.degraded,
        error=storable(completion.error),
        trace_id=completion.trace_id,
    )


def storable(value: str | None) -> str | None:
    """Text PostgreSQL accepts: a sampled answer can hold NUL characters, which text columns refuse."""
    return value.replace("\x00", "\ufffd") if value is not None else None


def _fail_run(session_factory: sessionmaker[Session], run_id: uuid.UUID, error: BaseException) -> None:
    # only a 'running' run: one another process stored as failed meanwhile keeps its reason
    with session_factory.begin() as session:
        session.execute(
            update(EvalRun)
            .where(EvalRun.id == run_id, EvalRun.status == "running")
            .values(status="failed", error=failure_reason(error), finished_at=datetime.now(UTC))
        )


def failure_reason(error: BaseException) -> str:
    """Why a run failed, in one line of at most 500 characters (``eval runs`` shows it)."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (SIGINT)"
    if isinstance(error, SystemExit):  # evallens.signals: signal n unwinds as SystemExit(128 + n)
        try:
            return f"interrupted ({signal.Signals(int(error.code or 0) - 128).name})"
        except ValueError:
            return f"interrupted (exit {error.code})"
    reason = error.reason if isinstance(error, RunFailed) else str(error)
    return (reason.splitlines() or [type(error).__name__])[0][:500]


def current_git_sha() -> str | None:
    """The commit checked out in the working directory, if it is a git checkout."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = result.stdout.strip()
    return sha if result.returncode == 0 and sha else None
