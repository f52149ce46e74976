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
# Graded metrics score a case anywhere in [0, 1]; the others score pass (1) or fail (0). The gate picks
# its paired test by this kind, never by the values a run happened to produce.
GRADED_METRICS: frozenset[str] = frozenset({"recall"})

Verdict = Literal["pass", "regression"]


class MetricEstimate(BaseModel):
    """A metric's mean over cases with a bootstrap confidence interval."""

    mean: float = Field(description="mean score over the cases that the metric applies to")
    ci_low: float = Field(description="lower bound of the 95% bootstrap confidence interval")
    ci_high: float = Field(description="upper bound of the 95% bootstrap confidence interval")
    n: int = Field(description="number of scored cases")


class CacheCounts(BaseModel):
    """How many of a run's answers the target served from its response caches."""

    num_answers: int = Field(description="requests sent (cases x repeats)")
    num_exact_hits: int = Field(description="answers the target marked as exact-cache hits")
    num_semantic_hits: int = Field(description="answers the target marked as semantic-cache hits")
    bypassed: bool = Field(default=False, description="the run asked the target not to use its caches")


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
    cache: CacheCounts | None = Field(default=None, description="absent in runs stored before it existed")


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
    num_pairs: int = Field(description="cases scored in both runs (repeats averaged per case)")
    test: Literal["mcnemar", "sign_flip", "paired_bootstrap"] = Field(
        description="exact McNemar (pass/fail), paired sign-flip permutation (graded or repeated); "
        "paired_bootstrap only in reports stored by earlier versions"
    )
    exact: bool = Field(default=True, description="the p-value is exact, not a Monte Carlo estimate")
    p_value: float = Field(
        description="one-sided p-value of this cell's own test for 'the candidate is worse'"
    )
    p_adjusted: float = Field(
        description="adjusted for the whole report: Holm over the overall cells; closed testing for scenarios"
    )
    significant: bool = Field(description="significantly worse: p_adjusted < alpha")
    regression: bool = Field(description="significant and worse than the minimum effect")
    num_worse: int = Field(default=0, description="cases that scored worse in the candidate")
    num_better: int = Field(default=0, description="cases that scored better in the candidate")
    level: float | None = Field(
        default=None, description="the one-sided level this cell's power is computed at"
    )
    min_detectable: float | None = Field(
        default=None,
        description="smallest drop (rate units) found with the configured power; None: no possible drop",
    )
    max_drop: float | None = Field(default=None, description="the largest drop the baseline leaves room for")
    underpowered: bool = Field(default=False, description="cannot detect a drop of the minimum effect")
    suggested_num_cases: int | None = Field(
        default=None, description="cases this cell needs to detect the minimum effect; None: cannot"
    )


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
    power: float | None = Field(default=None, description="the power minimum detectable drops are at")
    procedure: str = Field(default="holm", description="the multiplicity procedure ('holm': older reports)")
    error_rate: str | None = Field(default=None, description="the error rate the procedure controls")
    repeats_baseline: int = 1
    repeats_candidate: int = 1
    cache_baseline: CacheCounts | None = None
    cache_candidate: CacheCounts | None = None
    num_unscored: dict[str, int] = Field(
        default_factory=dict,
        description="metric -> cases left out of its paired tests because a run could not score them "
        "(the LLM judge gave no verdict)",
    )
    edited_cases: list[str] = Field(
        default_factory=list,
        description="keys of cases edited between the runs' set versions (another reference, facts or "
        "wording), left out of the comparison: their two answers were not asked or judged the same way",
    )
    baseline_only_cases: list[str] = Field(
        default_factory=list,
        description="keys of cases only the baseline's set version has (removed since): not compared",
    )
    candidate_only_cases: list[str] = Field(
        default_factory=list,
        description="keys of cases only the candidate's set version has (added since): not compared",
    )
    comparisons: list[MetricComparison]
    infra_baseline: InfraSummary | None
    infra_candidate: InfraSummary | None
    hints: list[Hint]
    flipped_cases: list[FlippedCase]
