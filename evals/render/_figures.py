"""Formatting shared by the report writers."""

from evallens.reports import CacheCounts, GateReportBody, InfraSummary, MetricComparison

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
    """REGRESSION, significantly worse but below the minimum effect, or no significant drop."""
    if comparison.regression:
        return "REGRESSION"
    if comparison.significant:
        return "worse, below min effect"
    return "no significant drop"


def detectable(comparison: MetricComparison) -> str:
    """The cell's minimum detectable drop in points ('none' when no possible drop is), '!' if underpowered."""
    if comparison.level is None:
        return "-"
    value = "none" if comparison.min_detectable is None else f"{comparison.min_detectable * 100:.0f}"
    return f"{value}!" if comparison.underpowered else value


def power_note(comparison: MetricComparison, min_effect: float) -> str:
    """Why an underpowered cell cannot see the minimum effect, and what would fix it."""
    cell = f"{comparison.scenario} {comparison.metric} (n={comparison.num_pairs})"
    if comparison.min_detectable is None:
        room = (comparison.max_drop or 0.0) * 100
        what = f"{cell}: cannot detect any drop (the baseline leaves room for {room:.0f} points)"
    else:
        what = f"{cell}: too few cases: can detect only drops >= {comparison.min_detectable * 100:.0f} points"
    if comparison.suggested_num_cases is None:
        return f"{what}; no number of cases detects a {min_effect * 100:.0f}-point drop from this baseline"
    extra = max(0, comparison.suggested_num_cases - comparison.num_pairs)
    total = comparison.suggested_num_cases
    return f"{what}; add about {extra} cases ({total} in all) to detect {min_effect * 100:.0f} points"


def underpowered(body: GateReportBody) -> list[MetricComparison]:
    """Cells that cannot detect a drop of the minimum effect, overall cells first."""
    return [c for c in body.comparisons if c.underpowered]


def power_summary(body: GateReportBody) -> str | None:
    """One line: how many cells cannot detect the minimum effect at the configured power."""
    weak = underpowered(body)
    if body.power is None or not weak:
        return None
    effect, power = body.min_effect * 100, body.power * 100
    share = f"{len(weak)} of {len(body.comparisons)} cells"
    return f"{share} cannot detect a {effect:.0f}-point drop with {power:.0f}% power"


def cache_line(label: str, counts: CacheCounts | None) -> str | None:
    """``baseline: 146 of 194 answers from the exact cache, 3 from the semantic cache``."""
    if counts is None:
        return None
    line = (
        f"{label}: {counts.num_exact_hits} of {counts.num_answers} answers from the exact cache, "
        f"{counts.num_semantic_hits} from the semantic cache"
    )
    return line + (" (caches bypassed: --no-cache)" if counts.bypassed else "")


def cache_warning(body: GateReportBody) -> str | None:
    """A warning when cached answers dominate a run: such a comparison says little about the model."""
    for label, counts in (("baseline", body.cache_baseline), ("candidate", body.cache_candidate)):
        if counts is not None and counts.num_answers and counts.num_exact_hits * 2 > counts.num_answers:
            return (
                f"most {label} answers came from the exact cache: this comparison says little about the "
                "model; replay with `evallens eval run --no-cache` for a model-only comparison"
            )
    return None


def points(delta: float) -> str:
    """A rate difference in points, signed."""
    return f"{delta * 100:+.1f}"
