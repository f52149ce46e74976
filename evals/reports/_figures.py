"""Formatting shared by the report writers."""

from evallens.reports import InfraSummary, MetricComparison

INFRA_ROWS: list[tuple[str, str]] = [
    ("latency_ms_p50", "latency p50 (ms)"),
    ("latency_ms_p95", "latency p95 (ms)"),
    ("latency_ms_p99", "latency p99 (ms)"),
    ("ttft_ms_p50", "TTFT p50 (ms)"),
    ("ttft_ms_p95", "TTFT p95 (ms)"),
    ("output_tokens_per_s", "output tokens/s"),
    ("kv_cache_usage_mean", "KV-cache usage mean"),
    ("kv_cache_usage_max", "KV-cache usage max"),
    ("prefix_cache_hit_rate", "prefix-cache hit rate"),
    ("exact_cache_hit_rate", "exact-cache hit rate"),
    ("semantic_cache_hit_rate", "semantic-cache hit rate"),
    ("queue_time_ms_mean", "queue time mean (ms)"),
    ("num_requests_waiting_max", "waiting requests max"),
    ("num_preemptions", "preemptions"),
    ("num_degraded", "degraded"),
    ("num_timeouts", "timeouts"),
    ("num_errors", "errors"),
    ("num_requests", "requests"),
]


def number(value: float | None) -> str:
    """A figure with sensible precision, or a dash."""
    if value is None:
        return "-"
    if float(value).is_integer() and abs(value) >= 1:
        return f"{value:.0f}"
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"


def infra_rows(base: InfraSummary | None, cand: InfraSummary | None) -> list[tuple[str, str, str, str]]:
    """(label, baseline, candidate, delta) for every infra figure either run has."""
    rows = []
    for field, label in INFRA_ROWS:
        b = getattr(base, field) if base is not None else None
        c = getattr(cand, field) if cand is not None else None
        if b is None and c is None:
            continue
        delta = number(c - b) if b is not None and c is not None else "-"
        if delta not in ("-",) and not delta.startswith("-"):
            delta = f"+{delta}"
        rows.append((label, number(b), number(c), delta))
    return rows


def verdict_word(comparison: MetricComparison) -> str:
    """REGRESSION, better, worse (not significant) or same."""
    if comparison.regression:
        return "REGRESSION"
    if comparison.significant:
        return "significant change"
    return "no significant change"


def points(delta: float) -> str:
    """A rate difference in points, signed."""
    return f"{delta * 100:+.1f}"
