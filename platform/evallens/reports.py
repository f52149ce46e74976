"""Shapes of the JSON the eval engine stores and the dashboard reads.

``eval_runs.summary`` holds a ``RunSummary``, ``eval_runs.infra`` an ``InfraSummary`` and
``gate_reports.report`` a ``GateReportBody``. Both components import these models from here, so the
stored JSON has one definition.
"""

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

MetricName = Literal["accuracy", "irrelevance", "harmfulness", "recall"]
METRICS: tuple[MetricName, ...] = ("accuracy", "irrelevance", "harmfulness", "recall")

# Each metric's score is a rate in [0, 1]; for these two a lower rate is better.
LOWER_IS_BETTER: frozenset[str] = frozenset({"irrelevance", "harmfulness"})

Verdict = Literal["pass", "regression"]


class MetricEstimate(BaseModel):
    """A metric's mean over cases with a bootstrap confidence interval."""

    mean: float = Field(description="mean score over the cases that the metric applies to")
    ci_low: float = Field(description="lower bound of the 95% bootstrap confidence interval")
    ci_high: float = Field(description="upper bound of the 95% bootstrap confidence interval")
    n: int = Field(description="number of scored cases")


class RunSummary(BaseModel):
    """Quality of one run: per metric overall and per scenario."""

    overall: dict[str, MetricEstimate] = Field(description="metric name -> estimate")
    scenarios: dict[str, dict[str, MetricEstimate]] = Field(description="scenario -> metric name -> estimate")
    num_cases: int
    num_errors: int = Field(description="cases whose request failed (scored as failures)")
    num_unscored: dict[str, int] = Field(
        default_factory=dict,
        description="metric -> results the LLM judge left unscored (no verdict; excluded from the estimates)",
    )


class InfraSummary(BaseModel):
    """What the serving stack did during a run's time window (from spans and metric samples)."""

    window_start: datetime
    window_end: datetime
    num_requests: int = 0
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None
    latency_ms_p99: float | None = None
    ttft_ms_p50: float | None = None
    ttft_ms_p95: float | None = None
    output_tokens_per_s: float | None = None
    kv_cache_usage_mean: float | None = None
    kv_cache_usage_max: float | None = None
    prefix_cache_hit_rate: float | None = None
    exact_cache_hit_rate: float | None = None
    semantic_cache_hit_rate: float | None = None
    queue_time_ms_mean: float | None = None
    num_requests_waiting_max: float | None = None
    num_preemptions: float | None = None
    num_degraded: int = 0
    num_timeouts: int = 0
    num_errors: int = 0


class MetricComparison(BaseModel):
    """One scenario x metric cell of a comparison between a baseline and a candidate run."""

    scenario: str = Field(description="a scenario name, or 'overall'")
    metric: str
    baseline: float
    candidate: float
    delta: float = Field(description="candidate - baseline, in rate units (0.03 = 3 points)")
    num_pairs: int
    test: Literal["mcnemar", "paired_bootstrap"]
    p_value: float
    p_adjusted: float = Field(description="Holm-adjusted across the family")
    significant: bool
    regression: bool = Field(description="significant and worse than the minimum effect")


class Hint(BaseModel):
    """A likely cause drawn from serving metrics, with the numbers it rests on."""

    message: str
    evidence: dict[str, float | None]


class FlippedCase(BaseModel):
    """A case that passed a metric in the baseline and failed it in the candidate."""

    case_key: str
    scenario: str
    metric: str
    question: str | None
    reference_answer: str | None
    baseline_response: str | None
    candidate_response: str | None
    baseline_retrieved_ids: list[str]
    candidate_retrieved_ids: list[str]
    baseline_trace_id: str | None
    candidate_trace_id: str | None


class GateReportBody(BaseModel):
    """The full result of comparing a candidate run against a baseline run."""

    verdict: Verdict
    eval_set_name: str
    baseline_run_id: str
    candidate_run_id: str
    min_effect: float
    alpha: float
    comparisons: list[MetricComparison]
    infra_baseline: InfraSummary | None
    infra_candidate: InfraSummary | None
    hints: list[Hint]
    flipped_cases: list[FlippedCase]
