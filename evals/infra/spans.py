"""Request-level serving figures of one run from its spans (one trace per request)."""

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens.db.models import Span
from evallens.telemetry import attributes as attr

ERROR_STATUS = 2


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
