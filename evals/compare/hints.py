"""Likely causes of a quality change, read from the serving figures; each names its numbers."""

from collections.abc import Callable
from typing import Any

from evallens.reports import Hint, InfraSummary, MetricComparison
from evals.compare.cells import OVERALL, worse_by

RATE_RISE = 0.05  # a cache hit rate that rose by 5 points changed behaviour
RELATIVE_RISE = 0.2  # latency figures 20% higher are a real slowdown
KV_NEAR_FULL = 0.9


def draw_hints(
    comparisons: list[MetricComparison],
    baseline: InfraSummary | None,
    candidate: InfraSummary | None,
    config_changes: list[str],
    min_effect: float,
) -> list[Hint]:
    """Every hint whose condition holds, most specific first."""
    worse = {
        c.metric: c
        for c in comparisons
        if c.scenario == OVERALL and worse_by(c.metric, c.delta) >= min_effect
    }
    worse.update({c.metric: c for c in comparisons if c.regression and c.metric not in worse})
    hints: list[Hint] = []
    if baseline is not None and candidate is not None:
        for rule in RULES:
            hint = rule(worse, baseline, candidate)
            if hint is not None:
                hints.append(hint)
    if config_changes and worse:
        shown = ", ".join(config_changes[:8]) + (" ..." if len(config_changes) > 8 else "")
        metrics = ", ".join(sorted(worse))
        hints.append(
            Hint(message=f"{metrics} got worse and the target's config changed: {shown}", evidence={})
        )
    return hints


Rule = Callable[[dict[str, MetricComparison], InfraSummary, InfraSummary], Hint | None]


CACHE_SENSITIVE = ("accuracy", "recall", "irrelevance")


def _semantic_cache(
    worse: dict[str, MetricComparison], base: InfraSummary, cand: InfraSummary
) -> Hint | None:
    rise = _rise(base.semantic_cache_hit_rate, cand.semantic_cache_hit_rate)
    hurt = [worse[name] for name in CACHE_SENSITIVE if name in worse]
    if not hurt or rise is None or rise < RATE_RISE:
        return None
    changes = ", ".join(f"{c.metric} {_points(c)}" for c in hurt)
    evidence: dict[str, float | None] = {}
    for comparison in hurt:
        evidence.update(_evidence(comparison, "semantic_cache_hit_rate", base, cand))
    return Hint(
        message=(
            f"semantic-cache hits rose {rise * 100:.0f} points while quality got worse ({changes}): the "
            "semantic-cache similarity threshold is likely too loose (it serves answers, and their "
            "citations, cached for different questions)"
        ),
        evidence=evidence,
    )


def _exact_cache(worse: dict[str, MetricComparison], base: InfraSummary, cand: InfraSummary) -> Hint | None:
    rise = _rise(base.exact_cache_hit_rate, cand.exact_cache_hit_rate)
    if "accuracy" not in worse or rise is None or rise < RATE_RISE:
        return None
    return Hint(
        message=(
            f"accuracy fell {_points(worse['accuracy'])} while exact-cache hits rose "
            f"{rise * 100:.0f} points: "
            "stale cached answers (a cache key that ignores a changed model or parameter)"
        ),
        evidence=_evidence(worse["accuracy"], "exact_cache_hit_rate", base, cand),
    )


def _retrieval(worse: dict[str, MetricComparison], base: InfraSummary, cand: InfraSummary) -> Hint | None:
    cache_rise = _rise(base.semantic_cache_hit_rate, cand.semantic_cache_hit_rate)
    if "recall" not in worse or (cache_rise is not None and cache_rise >= RATE_RISE):
        return None  # cached answers carry other questions' citations: the cache hint explains it
    recall = worse["recall"]
    return Hint(
        message=(
            f"retrieval recall fell {_points(recall)}: the index, the embedding model or top_k changed "
            "(or retrieval is off)"
        ),
        evidence={"recall_baseline": recall.baseline, "recall_candidate": recall.candidate},
    )


def _kv_pressure(worse: dict[str, MetricComparison], base: InfraSummary, cand: InfraSummary) -> Hint | None:  # noqa: ARG001
    ttft_rise = _relative(base.ttft_ms_p95, cand.ttft_ms_p95)
    waiting_up = (cand.num_requests_waiting_max or 0) > (base.num_requests_waiting_max or 0)
    preempted = (cand.num_preemptions or 0) > (base.num_preemptions or 0)
    kv_full = (cand.kv_cache_usage_max or 0) >= KV_NEAR_FULL
    if ttft_rise is None or ttft_rise < RELATIVE_RISE or not kv_full or not (waiting_up or preempted):
        return None
    return Hint(
        message=(
            f"TTFT p95 rose {ttft_rise * 100:.0f}% with KV-cache usage at {cand.kv_cache_usage_max:.2f} and "
            "more waiting or preempted requests: KV-cache pressure (fewer KV blocks, longer prompts or more "
            "concurrency)"
        ),
        evidence=_pick(
            base, cand, "ttft_ms_p95", "kv_cache_usage_max", "num_requests_waiting_max", "num_preemptions"
        ),
    )


def _degraded(worse: dict[str, MetricComparison], base: InfraSummary, cand: InfraSummary) -> Hint | None:  # noqa: ARG001
    if cand.num_degraded + cand.num_timeouts <= base.num_degraded + base.num_timeouts:
        return None
    return Hint(
        message=(
            f"degraded answers went {base.num_degraded} -> {cand.num_degraded} and timeouts "
            f"{base.num_timeouts} -> {cand.num_timeouts}: latency budgets or circuit breakers tripped"
        ),
        evidence=_pick(base, cand, "num_degraded", "num_timeouts"),
    )


def _errors(worse: dict[str, MetricComparison], base: InfraSummary, cand: InfraSummary) -> Hint | None:  # noqa: ARG001
    if cand.num_errors <= base.num_errors:
        return None
    return Hint(
        message=f"failed requests went {base.num_errors} -> {cand.num_errors}: they score as failures",
        evidence=_pick(base, cand, "num_errors"),
    )


def _prefix_cache(worse: dict[str, MetricComparison], base: InfraSummary, cand: InfraSummary) -> Hint | None:  # noqa: ARG001
    drop = _rise(cand.prefix_cache_hit_rate, base.prefix_cache_hit_rate)
    ttft_rise = _relative(base.ttft_ms_p50, cand.ttft_ms_p50)
    if drop is None or drop < 2 * RATE_RISE or ttft_rise is None or ttft_rise < RELATIVE_RISE:
        return None
    return Hint(
        message=(
            f"prefix-cache hit rate fell {drop * 100:.0f} points and TTFT p50 rose {ttft_rise * 100:.0f}%: "
            "the prompt prefix changed or prefix caching is off"
        ),
        evidence=_pick(base, cand, "prefix_cache_hit_rate", "ttft_ms_p50"),
    )


RULES: list[Rule] = [
    _semantic_cache,
    _exact_cache,
    _retrieval,
    _kv_pressure,
    _prefix_cache,
    _degraded,
    _errors,
]


def config_changes(baseline: dict[str, Any], candidate: dict[str, Any]) -> list[str]:
    """``key: old -> new`` for every leaf of the target config that differs (fingerprint aside)."""
    old, new = _flatten(baseline), _flatten(candidate)
    keys = sorted((set(old) | set(new)) - {"fingerprint"})
    return [f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in keys if old.get(key) != new.get(key)]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}{key}."))
        return flat
    return {prefix.rstrip("."): value}


def _rise(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def _relative(before: float | None, after: float | None) -> float | None:
    return None if not before or after is None else (after - before) / before


def _points(comparison: MetricComparison) -> str:
    return (
        f"{abs(comparison.delta) * 100:.1f} points ({comparison.baseline:.2f} -> {comparison.candidate:.2f})"
    )


def _pick(base: InfraSummary, cand: InfraSummary, *names: str) -> dict[str, float | None]:
    evidence: dict[str, float | None] = {}
    for name in names:
        evidence[f"{name}_baseline"] = getattr(base, name)
        evidence[f"{name}_candidate"] = getattr(cand, name)
    return evidence


def _evidence(
    comparison: MetricComparison, infra_name: str, base: InfraSummary, cand: InfraSummary
) -> dict[str, float | None]:
    evidence: dict[str, float | None] = {
        f"{comparison.metric}_baseline": comparison.baseline,
        f"{comparison.metric}_candidate": comparison.candidate,
    }
    evidence.update(_pick(base, cand, infra_name))
    return evidence
