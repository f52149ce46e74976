"""Request-level serving figures of one run from its spans (one trace per request)."""

import time
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import Span
from evallens.telemetry import attributes as attr

ERROR_STATUS = 2
# OpenTelemetry's batch exporter sends every 5 s by default: this long without a new span, none is coming.
SETTLE_S = 7.0
POLL_S = 0.5


@dataclass(frozen=True)
class RequestFigures:
    """What one request did, from whichever source recorded it (spans or the runner's results)."""

    latency_ms: float | None
    ttft_ms: float | None
    output_tokens: int | None
    exact_cache_hit: bool | None
    semantic_cache_hit: bool | None
    degraded: bool
    timeout: bool
    error: bool


def requests_from_spans(session: Session, run_id: str, project: str) -> list[RequestFigures]:
    """One ``RequestFigures`` per trace of ``project`` whose spans carry ``evallens.eval.run_id`` =
    ``run_id`` (another project's spans never count, whatever run id they claim)."""
    spans = session.scalars(select(Span).where(Span.eval_run_id == run_id, Span.project == project))
    traces: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        traces[span.trace_id].append(span)
    return [_figures(members) for _, members in sorted(traces.items())]


def await_spans(
    sessions: sessionmaker[Session], run_id: str, project: str, trace_ids: Collection[str], timeout_s: float
) -> int:
    """Wait (at most ``timeout_s``) until the spans of every trace the target reported for the run are
    stored, while they keep arriving; returns how many traces are stored. The first span gets as long
    as any later one (``SETTLE_S``, one export period and then some): a run shorter than an export
    batch, such as replies from a cache, ends before any span is sent. No wait when the target reported
    no trace: it is not instrumented."""
    expected = set(trace_ids)

    def stored() -> int:
        with sessions() as session:
            query = select(func.count(func.distinct(Span.trace_id))).where(
                Span.eval_run_id == run_id, Span.project == project, Span.trace_id.in_(expected)
            )
            return int(session.scalar(query) or 0)

    seen = stored() if expected else 0
    started = last_progress = time.monotonic()
    while seen < len(expected):
        now = time.monotonic()
        if now - started >= timeout_s or now - last_progress >= SETTLE_S:
            break
        time.sleep(POLL_S)
        if (count := stored()) > seen:
            seen, last_progress = count, time.monotonic()
    return seen


def _figures(spans: list[Span]) -> RequestFigures:
    ids = {span.span_id for span in spans}
    roots = [s for s in spans if s.parent_span_id is None or s.parent_span_id not in ids]
    root = min(roots or spans, key=lambda s: s.start_time)
    ttft_s = _first_number(spans, attr.TIME_TO_FIRST_TOKEN_S, attr.GEN_AI_SERVER_TIME_TO_FIRST_TOKEN)
    tokens = [s.output_tokens for s in spans if s.output_tokens is not None]
    return RequestFigures(
        latency_ms=root.duration_ms,
        ttft_ms=ttft_s * 1000 if ttft_s is not None else None,
        output_tokens=max(tokens) if tokens else None,
        exact_cache_hit=_any_flag(spans, attr.CACHE_EXACT_HIT),
        semantic_cache_hit=_any_flag(spans, attr.CACHE_SEMANTIC_HIT),
        degraded=bool(_any_flag(spans, attr.DEGRADED)),
        timeout=bool(_any_flag(spans, attr.TIMEOUT)),
        error=root.status_code == ERROR_STATUS,
    )


def _first_number(spans: list[Span], *names: str) -> float | None:
    for span in spans:
        for name in names:
            value = span.attributes.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
    return None


def _any_flag(spans: list[Span], name: str) -> bool | None:
    values = [_truthy(span.attributes[name]) for span in spans if name in span.attributes]
    return any(values) if values else None


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"true", "1", "yes"}
    return bool(value)
