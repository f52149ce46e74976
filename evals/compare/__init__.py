"""Compare a candidate run with a baseline run: paired statistics, infra deltas, hints, flipped cases."""

import uuid
from typing import Any

from sqlalchemy.orm import Session

from evallens.db.models import EvalRun
from evallens.db.models.traces import DEFAULT_PROJECT
from evallens.reports import CacheCounts, GateReportBody, InfraSummary, MetricComparison, RunSummary
from evallens.runs import (
    RunNotFound,
    RunRef,
    StoredResult,
    edited_cases,
    flipped_cases,
    load_results,
    resolve_run,
    scoring_differences,
)
from evals.compare.cells import ComparisonOptions, compare_cells
from evals.compare.hints import config_changes, draw_hints
from evals.compare.procedure import ERROR_RATE, PROCEDURE
from evals.errors import NothingCompared, ScoredDifferently
from evals.infra import compute_infra
from evals.scoring import case_scores


def compare_runs(
    session: Session,
    baseline: str,
    candidate: str,
    options: ComparisonOptions,
    *,
    project: str = DEFAULT_PROJECT,
) -> GateReportBody:
    """The full comparison of two completed runs (ids or tags) of the same set of ``project``, with
    the serving figures each run stored when it ended. Only the cases both runs asked alike are
    paired: a case edited between the runs' set versions is left out and named."""
    candidate_ref = resolve_run(session, candidate, project=project)
    baseline_ref = resolve_run(session, baseline, eval_set_name=candidate_ref.eval_set.name, project=project)
    for ref in (baseline_ref, candidate_ref):
        _require_completed(ref)
    if baseline_ref.run.id == candidate_ref.run.id:  # e.g. a run tagged main, then gated against main
        raise NothingCompared(
            f"'{baseline}' and '{candidate}' are the same run ({candidate_ref.run.id}): a run compared "
            "with itself tests nothing, so no verdict"
        )
    if baseline_ref.eval_set.name != candidate_ref.eval_set.name:
        raise RunNotFound(
            f"the runs replay different sets ('{baseline_ref.eval_set.name}' and "
            f"'{candidate_ref.eval_set.name}'); compare runs of one set"
        )
    candidate_run = candidate_ref.run
    require_same_scoring(
        baseline_ref.run, candidate_run.scoring, f"run {candidate_run.id}", candidate_ref.eval_set.name
    )
    base_results = load_results(session, baseline_ref.run.id)
    cand_results = load_results(session, candidate_ref.run.id)
    edited = edited_cases(base_results, cand_results)
    base_results, cand_results = (
        [item for item in results if item.case.case_key not in edited]
        for results in (base_results, cand_results)
    )
    base_keys, cand_keys = (
        {item.case.case_key for item in results} for results in (base_results, cand_results)
    )
    comparisons = compare_cells(case_scores(base_results), case_scores(cand_results), options)
    num_unscored = unscored_cases(base_results, cand_results)
    require_compared(comparisons, num_unscored, edited, baseline_ref.run.id, candidate_ref.run.id)
    infra_base, infra_cand = stored_infra(session, baseline_ref.run), stored_infra(session, candidate_ref.run)
    changes = config_changes(baseline_ref.run.config, candidate_ref.run.config)
    return GateReportBody(
        verdict="regression" if any(c.regression for c in comparisons) else "pass",
        eval_set_name=candidate_ref.eval_set.name,
        baseline_run_id=str(baseline_ref.run.id),
        candidate_run_id=str(candidate_ref.run.id),
        min_effect=options.min_effect,
        alpha=options.alpha,
        power=options.power,
        procedure=PROCEDURE,
        error_rate=ERROR_RATE,
        repeats_baseline=baseline_ref.run.repeats,
        repeats_candidate=candidate_ref.run.repeats,
        cache_baseline=cache_counts(baseline_ref.run, base_results),
        cache_candidate=cache_counts(candidate_ref.run, cand_results),
        num_unscored=num_unscored,
        edited_cases=edited,
        baseline_only_cases=sorted(base_keys - cand_keys),
        candidate_only_cases=sorted(cand_keys - base_keys),
        comparisons=comparisons,
        infra_baseline=infra_base,
        infra_candidate=infra_cand,
        hints=draw_hints(comparisons, infra_base, infra_cand, changes, options.min_effect),
        flipped_cases=flipped_cases(base_results, cand_results),
    )


def stored_infra(session: Session, run: EvalRun) -> InfraSummary:
    """The serving figures the run stored when it ended (computed and stored now for a run that has
    none, e.g. one stored before runs kept them)."""
    if run.infra is not None:
        return InfraSummary.model_validate(run.infra)
    infra = compute_infra(session, run)
    run.infra = infra.model_dump(mode="json")
    return infra


def cache_counts(run: EvalRun, results: list[StoredResult]) -> CacheCounts:
    """How many of a run's answers came from the target's exact and semantic caches: as the run stored
    them, or counted from its results for a run stored before runs kept them."""
    stored = RunSummary.model_validate(run.summary).cache if run.summary else None
    if stored is not None:
        return stored
    return CacheCounts(
        num_answers=len(results),
        num_exact_hits=sum(1 for r in results if r.result.exact_cache_hit),
        num_semantic_hits=sum(1 for r in results if r.result.semantic_cache_hit),
    )


def unscored_cases(baseline: list[StoredResult], candidate: list[StoredResult]) -> dict[str, int]:
    """Per metric, the cases either run left unscored: they are out of that metric's paired tests."""
    cases: dict[str, set[str]] = {}
    for stored in (*baseline, *candidate):
        for metric in stored.result.unscored or {}:
            cases.setdefault(metric, set()).add(stored.case.case_key)
    return {metric: len(keys) for metric, keys in sorted(cases.items())}


def _require_completed(ref: RunRef) -> None:
    if ref.run.status != "completed":
        raise RunNotFound(f"run {ref.run.id} is {ref.run.status}: only completed runs can be compared")


def require_compared(
    comparisons: list[MetricComparison],
    num_unscored: dict[str, int],
    edited: list[str],
    baseline_id: uuid.UUID,
    candidate_id: uuid.UUID,
) -> None:
    """``NothingCompared`` when no case was scored in both runs, or a metric left unscored was paired on
    no case: a verdict over no paired test would read as a pass of what it never tested."""
    compared = {c.metric for c in comparisons}
    untested = sorted(set(num_unscored) - compared)
    if compared and not untested:
        return
    left_out = [f"{len(edited)} edited between the runs' set versions"] if edited else []
    left_out += [f"{count} unscored on {metric}" for metric, count in num_unscored.items()]
    why = f" ({', '.join(left_out)})" if left_out else ""
    what = f"on {', '.join(untested)}" if compared else "on any metric"
    raise NothingCompared(
        f"runs {baseline_id} and {candidate_id} share no case scored {what}{why}: there is nothing to "
        "test, so no verdict"
    )


def require_same_scoring(
    baseline: EvalRun, candidate_scoring: dict[str, Any] | None, candidate: str, eval_set_name: str
) -> None:
    """``ScoredDifferently``, naming what differs, unless the candidate (a stored run, or one about to
    be made) was scored the way the ``baseline`` run was."""
    if baseline.scoring == candidate_scoring:
        return
    if baseline.scoring is None or candidate_scoring is None:
        older = f"run {baseline.id}" if baseline.scoring is None else candidate
        what = f"{older} was stored before runs recorded how they were scored"
    else:
        differing = scoring_differences(baseline.scoring, candidate_scoring)
        what = f"they are scored differently ({', '.join(differing)} changed)"
    raise ScoredDifferently(
        f"run {baseline.id} and {candidate} cannot be compared: {what}, so their scores may differ by "
        f"the metrics, not the target; replay the baseline with today's metrics (`evallens eval run --set "
        f"{eval_set_name} --tag main`) and gate against it"
    )


__all__ = [
    "ComparisonOptions",
    "cache_counts",
    "compare_runs",
    "require_compared",
    "require_same_scoring",
    "stored_infra",
    "unscored_cases",
]
