"""The serving side of a run: ``InfraSummary`` from its spans and the metric samples of its window."""

from datetime import UTC, datetime

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens.db.models import EvalResult, EvalRun
from evallens.reports import InfraSummary
from evallens.telemetry import metrics as prom
from evals.infra.samples import counter_delta, gauge_stats, histogram_mean
from evals.infra.spans import RequestFigures, await_spans, requests_from_spans


def compute_infra(session: Session, run: EvalRun) -> InfraSummary:
    """Serving figures for ``run``: from its spans, or the runner's own measurements without spans."""
    start = run.started_at
    end = run.finished_at or datetime.now(UTC)
    requests = requests_from_spans(session, str(run.id), run.project) or _requests_from_results(session, run)
    summary = InfraSummary(window_start=start, window_end=end, num_requests=len(requests))
    _add_request_figures(summary, requests)
    _add_engine_figures(session, run.project, summary, start, end)
    return summary


def _requests_from_results(session: Session, run: EvalRun) -> list[RequestFigures]:
    results = session.scalars(select(EvalResult).where(EvalResult.run_id == run.id))
    return [
        RequestFigures(
            latency_ms=r.latency_ms,
            ttft_ms=r.ttft_ms,
            output_tokens=r.output_tokens,
            exact_cache_hit=r.exact_cache_hit,
            semantic_cache_hit=r.semantic_cache_hit,
            degraded=bool(r.degraded),
            timeout=bool(r.error and "timeout" in r.error.lower()),
            error=r.error is not None,
        )
        for r in results
    ]


def _add_request_figures(summary: InfraSummary, requests: list[RequestFigures]) -> None:
    latencies = [r.latency_ms for r in requests if r.latency_ms is not None]
    ttfts = [r.ttft_ms for r in requests if r.ttft_ms is not None]
    summary.latency_ms_p50, summary.latency_ms_p95, summary.latency_ms_p99 = _percentiles(
        latencies, 50, 95, 99
    )
    summary.ttft_ms_p50, summary.ttft_ms_p95 = _percentiles(ttfts, 50, 95)
    timed = [r for r in requests if r.output_tokens is not None and r.latency_ms]
    if timed:
        tokens = sum(r.output_tokens or 0 for r in timed)
        summary.output_tokens_per_s = tokens / (sum(r.latency_ms or 0.0 for r in timed) / 1000)
    summary.exact_cache_hit_rate = _rate([r.exact_cache_hit for r in requests])
    summary.semantic_cache_hit_rate = _rate([r.semantic_cache_hit for r in requests])
    summary.num_degraded = sum(r.degraded for r in requests)
    summary.num_timeouts = sum(r.timeout for r in requests)
    summary.num_errors = sum(r.error for r in requests)


def _add_engine_figures(
    session: Session, project: str, summary: InfraSummary, start: datetime, end: datetime
) -> None:
    summary.kv_cache_usage_mean, summary.kv_cache_usage_max = gauge_stats(
        session, project, prom.VLLM_KV_CACHE_USAGE, start, end
    )
    _, summary.num_requests_waiting_max = gauge_stats(
        session, project, prom.VLLM_NUM_REQUESTS_WAITING, start, end
    )
    queries = counter_delta(session, project, prom.VLLM_PREFIX_CACHE_QUERIES, start, end)
    hits = counter_delta(session, project, prom.VLLM_PREFIX_CACHE_HITS, start, end)
    summary.prefix_cache_hit_rate = hits / queries if hits is not None and queries else None
    summary.num_preemptions = counter_delta(session, project, prom.VLLM_NUM_PREEMPTIONS, start, end)
    queue_s = histogram_mean(session, project, prom.VLLM_REQUEST_QUEUE_TIME, start, end)
    summary.queue_time_ms_mean = queue_s * 1000 if queue_s is not None else None


def _percentiles(values: list[float], *points: float) -> list[float | None]:
    if not values:
        return [None] * len(points)
    return [float(v) for v in np.percentile(np.asarray(values), points)]


def _rate(flags: list[bool | None]) -> float | None:
    known = [flag for flag in flags if flag is not None]
    return sum(known) / len(known) if known else None


__all__ = ["await_spans", "compute_infra"]
