"""Eval runs and gates, as the eval engine and the gate stored them: runs, summaries, verdicts, flips."""

from typing import Any, cast

import pandas as pd

from dashboard.data._db import cached, fail_abandoned, frame, reading
from evallens.reports import FlippedCase, GateReportBody
from evallens.runs import RunNotFound, baseline_of, flipped_cases, load_results, resolve_run

RUNS_SQL = """
SELECT r.id::text AS run_id, coalesce(r.label, left(r.id::text, 8)) AS label, s.name AS eval_set_name,
       s.version AS set_version, r.status, r.started_at, r.finished_at, r.config_fingerprint,
       (SELECT string_agg(t.tag, ', ') FROM eval_tags t WHERE t.run_id = r.id AND t.project = r.project)
         AS tags
FROM eval_runs r JOIN eval_sets s ON s.id = r.eval_set_id AND s.project = r.project
WHERE r.project = :p AND (CAST(:set_name AS text) IS NULL OR s.name = :set_name)
ORDER BY r.started_at DESC LIMIT 500
"""


@cached
def runs(url: str, project: str, eval_set_name: str | None = None) -> pd.DataFrame:
    """Eval runs, newest first, with their set, status and tags."""
    fail_abandoned(url, project)
    return frame(url, RUNS_SQL, p=project, set_name=eval_set_name)


@cached
def run_documents(url: str, project: str, run_id: str) -> dict[str, Any]:
    """The stored summary, infra and scoring JSON of one run of ``project`` (None where not computed or,
    for scoring, not recorded)."""
    row = frame(
        url,
        "SELECT summary, infra, scoring FROM eval_runs WHERE id = CAST(:id AS uuid) AND project = :p",
        id=run_id,
        p=project,
    )
    return {"summary": None, "infra": None, "scoring": None} if row.empty else dict(row.iloc[0])


@cached
def latest_gates(url: str, project: str) -> pd.DataFrame:
    """The newest gate verdict of each eval set, with how many cells regressed."""
    return frame(
        url,
        """
        SELECT DISTINCT ON (g.eval_set_name) g.eval_set_name, g.verdict, g.created_at,
          coalesce(b.label, left(b.id::text, 8)) AS baseline,
          coalesce(c.label, left(c.id::text, 8)) AS candidate,
          (SELECT count(*) FROM jsonb_array_elements(g.report->'comparisons') x
             WHERE x->>'regression' = 'true') AS num_regressions
        FROM gate_reports g JOIN eval_runs b ON b.id = g.baseline_run_id AND b.project = g.project
        JOIN eval_runs c ON c.id = g.candidate_run_id AND c.project = g.project
        WHERE g.project = :p ORDER BY g.eval_set_name, g.created_at DESC
        """,
        p=project,
    )


@cached
def gate_report(url: str, project: str, baseline_run_id: str, candidate_run_id: str) -> dict[str, Any] | None:
    """The newest stored gate report of ``project`` of exactly this baseline and candidate, if any."""
    found = frame(
        url,
        "SELECT report FROM gate_reports WHERE baseline_run_id = CAST(:b AS uuid)"
        " AND candidate_run_id = CAST(:c AS uuid) AND project = :p ORDER BY created_at DESC LIMIT 1",
        b=baseline_run_id,
        c=candidate_run_id,
        p=project,
    )
    return None if found.empty else cast(dict[str, Any], found["report"].iloc[0])


@cached
def metric_trend(url: str, project: str, eval_set_name: str) -> pd.DataFrame:
    """Each completed run's overall mean and interval per metric, oldest first, with the run's tags and
    how it was scored (``scoring``, None for runs stored before runs recorded it)."""
    return frame(
        url,
        """
        SELECT r.id::text AS run_id, coalesce(r.label, left(r.id::text, 8)) AS label, r.started_at,
               (SELECT string_agg(t.tag, ', ' ORDER BY t.tag) FROM eval_tags t
                WHERE t.run_id = r.id AND t.project = r.project) AS tags,
               r.scoring, m.key AS metric, (m.value->>'mean')::float AS mean,
               (m.value->>'ci_low')::float AS ci_low, (m.value->>'ci_high')::float AS ci_high
        FROM eval_runs r JOIN eval_sets s ON s.id = r.eval_set_id AND s.project = r.project
        CROSS JOIN LATERAL jsonb_each(r.summary->'overall') m
        WHERE r.project = :p AND s.name = :set_name AND r.status = 'completed' AND r.summary IS NOT NULL
        ORDER BY r.started_at, r.id, m.key
        """,
        p=project,
        set_name=eval_set_name,
    )


@cached
def baseline(url: str, project: str, run_id: str) -> str | None:
    """The run ``run_id`` is judged against (``evallens.runs.baseline_of``: its gate's baseline first)."""
    with reading(url) as session:
        found = baseline_of(session, run_id, project)
    return None if found is None else str(found)


@cached
def flips(url: str, project: str, baseline_run_id: str, candidate_run_id: str) -> pd.DataFrame:
    """Cases that got worse on a metric: those the gate stored for this pair, else computed the gate's
    way (``evallens.runs.flipped_cases``); empty for runs of another project."""
    stored = gate_report(url, project, baseline_run_id, candidate_run_id)
    if stored is not None:
        found = GateReportBody.model_validate(stored).flipped_cases
    else:
        with reading(url) as session:
            try:
                runs = [resolve_run(session, run_id, project=project).run.id
                        for run_id in (baseline_run_id, candidate_run_id)]  # fmt: skip
            except RunNotFound:
                runs = []
            found = flipped_cases(*(load_results(session, run) for run in runs)) if runs else []
    columns = list(FlippedCase.model_fields)
    return pd.DataFrame([flip.model_dump() for flip in found], columns=columns)
