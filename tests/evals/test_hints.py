"""Each hint rule fires on its own serving pattern and stays silent on every other one."""

from datetime import UTC, datetime
from typing import Any

import pytest

from evallens.reports import InfraSummary, MetricComparison
from evals.compare.hints import draw_hints

pytestmark = pytest.mark.unit
T0 = datetime(2025, 3, 1, tzinfo=UTC)

# what each rule's message starts with (or contains), to tell which rules fired
RULE_MARKS = {
    "semantic_cache": "semantic-cache hits rose",
    "exact_cache": "exact-cache hits rose",
    "retrieval": "retrieval recall fell",
    "kv_pressure": "KV-cache pressure",
    "prefix_cache": "prefix-cache hit rate fell",
    "degraded": "degraded answers went",
    "errors": "failed requests went",
    "config": "the target's config changed",
}

CALM: dict[str, Any] = {
    "latency_ms_p50": 400.0,
    "ttft_ms_p50": 100.0,
    "ttft_ms_p95": 200.0,
    "kv_cache_usage_max": 0.5,
    "prefix_cache_hit_rate": 0.6,
    "exact_cache_hit_rate": 0.0,
    "semantic_cache_hit_rate": 0.0,
    "num_requests_waiting_max": 0.0,
    "num_preemptions": 0.0,
    "num_degraded": 0,
    "num_timeouts": 0,
    "num_errors": 0,
}


def infra(**changes: Any) -> InfraSummary:
    return InfraSummary(window_start=T0, window_end=T0, num_requests=100, **{**CALM, **changes})


def worse(metric: str, before: float, after: float) -> MetricComparison:
    return MetricComparison(
        scenario="overall", metric=metric, baseline=before, candidate=after, delta=after - before,
        num_pairs=100, test="mcnemar", p_value=0.001, p_adjusted=0.004, significant=True, regression=True,
    )  # fmt: skip


ACCURACY_DOWN = worse("accuracy", 0.6, 0.4)
RECALL_DOWN = worse("recall", 0.9, 0.6)


def case(
    name: str, fires: set[str], *quality: MetricComparison, changes: tuple[str, ...] = (), **candidate: Any
) -> Any:
    """One pattern: the quality that got worse, the candidate's serving figures, the rules that fire."""
    return pytest.param(list(quality), candidate, list(changes), fires, id=name)


CASES = [
    case("semantic cache", {"semantic_cache"}, ACCURACY_DOWN, semantic_cache_hit_rate=0.3),
    case("semantic cache, recall", {"semantic_cache"}, RECALL_DOWN, semantic_cache_hit_rate=0.3),
    case("exact cache", {"exact_cache"}, ACCURACY_DOWN, exact_cache_hit_rate=0.5),
    case("retrieval", {"retrieval"}, RECALL_DOWN),
    case(
        "kv waiting",
        {"kv_pressure"},
        ttft_ms_p95=400.0,
        kv_cache_usage_max=0.97,
        num_requests_waiting_max=6.0,
    ),
    case("kv preempted", {"kv_pressure"}, ttft_ms_p95=300.0, kv_cache_usage_max=0.95, num_preemptions=4.0),
    case("prefix cache", {"prefix_cache"}, prefix_cache_hit_rate=0.2, ttft_ms_p50=150.0),
    case("degraded", {"degraded"}, num_degraded=5),
    case("timeouts", {"degraded"}, num_timeouts=2),
    case("errors", {"errors"}, num_errors=7),
    case("config", {"config"}, ACCURACY_DOWN, changes=("top_k: 5 -> 1",)),
    # near misses: silent just below a threshold, or without the quality drop a rule needs
    case("semantic cache, no drop", set(), semantic_cache_hit_rate=0.3),
    case("semantic cache, small rise", set(), ACCURACY_DOWN, semantic_cache_hit_rate=0.04),
    case("exact cache, recall only", {"retrieval"}, RECALL_DOWN, exact_cache_hit_rate=0.5),
    case("kv full but fast", set(), kv_cache_usage_max=0.97, num_requests_waiting_max=6.0),
    case("slow, kv not full", set(), ttft_ms_p95=400.0, kv_cache_usage_max=0.7, num_requests_waiting_max=6.0),
    case("prefix drop, not slower", set(), prefix_cache_hit_rate=0.2),
    case("config change, no drop", set(), changes=("top_k: 5 -> 1",)),
    case("nothing", set()),
]


@pytest.mark.parametrize(("quality", "candidate", "changes", "expected"), CASES)
def test_hint_rules(
    quality: list[MetricComparison], candidate: dict[str, Any], changes: list[str], expected: set[str]
) -> None:
    hints = draw_hints(quality, infra(), infra(**candidate), changes, min_effect=0.03)
    fired = {rule for rule, mark in RULE_MARKS.items() if any(mark in hint.message for hint in hints)}
    assert fired == expected, [hint.message for hint in hints]
    assert len(hints) == len(expected)  # one hint per rule, none unaccounted for


def test_hints_name_their_numbers() -> None:
    hints = draw_hints([worse("accuracy", 0.6, 0.4)], infra(), infra(exact_cache_hit_rate=0.5), [], 0.03)
    (hint,) = hints
    assert "20.0 points (0.60 -> 0.40)" in hint.message and "50 points" in hint.message
    assert hint.evidence == {
        "accuracy_baseline": 0.6,
        "accuracy_candidate": 0.4,
        "exact_cache_hit_rate_baseline": 0.0,
        "exact_cache_hit_rate_candidate": 0.5,
    }
    assert draw_hints([worse("accuracy", 0.6, 0.4)], None, None, [], 0.03) == []
