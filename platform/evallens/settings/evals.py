"""The eval engine: which endpoint it replays sets against, how it scores and when it calls a regression."""

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings

from evallens.settings._base import settings_config


class EvalSettings(BaseSettings):
    """Runner, metric and gate knobs of ``evallens eval`` and ``evallens gate``."""

    model_config = settings_config()

    eval_endpoint: str = Field(
        default="http://127.0.0.1:8000",
        description="Base URL of the OpenAI-compatible target (with or without a trailing /v1).",
    )
    eval_model: str | None = Field(
        default=None,
        description="Model name sent in each request; unset: the first id of the target's /v1/models.",
    )
    eval_api_key: str | None = Field(
        default=None, description="Bearer token sent to the target, if it needs one."
    )
    eval_concurrency: int = Field(default=4, ge=1, le=256, description="Requests in flight at once.")
    eval_request_timeout_s: float = Field(
        default=120.0, gt=0, description="Seconds one request may take before it is a recorded failure."
    )
    eval_temperature: float = Field(default=0.0, ge=0, description="Sampling temperature sent to the target.")
    eval_max_tokens: int = Field(default=256, ge=1, description="max_tokens sent with each request.")
    eval_recall_k: int = Field(
        default=5, ge=1, description="Recall@k: how many of the cited ids (in order) count as retrieved."
    )
    eval_similarity_threshold: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description="Cosine similarity to the reference (all-MiniLM-L6-v2) an accurate answer reaches.",
    )
    eval_relevance_threshold: float = Field(
        default=0.15,
        ge=0,
        le=1,
        description="Cosine similarity between question and answer below which an answer is irrelevant.",
    )
    eval_judge_endpoint: str | None = Field(
        default=None,
        description="OpenAI-compatible LLM judge endpoint for accuracy (ragas llm_factory); unset: no judge.",
    )
    eval_judge_model: str | None = Field(default=None, description="Model name of the judge.")
    eval_judge_api_key: str = Field(default="none", description="API key sent to the judge endpoint.")
    eval_judge_mode: str = Field(
        default="both",
        pattern="^(both|judge)$",
        description="With a judge: 'both' = facts, similarity and judge must agree; 'judge' = judge only.",
    )
    eval_min_effect: float = Field(
        default=0.03, ge=0, le=1, description="Smallest worsening (rate units) that counts as a regression."
    )
    eval_alpha: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description="Family-wise error rate of the gate's verdict (Holm over the overall cells) and of "
        "each metric's scenario flags (closed testing).",
    )
    eval_power: float = Field(
        default=0.8,
        gt=0,
        lt=1,
        description="Power at which reports state each cell's minimum detectable drop.",
    )
    eval_permutation_resamples: int = Field(
        default=100_000,
        ge=1000,
        description="Monte Carlo resamples of the paired sign-flip test when no exact distribution is "
        "computed (p never below 1 / (1 + resamples)).",
    )
    eval_bootstrap_resamples: int = Field(
        default=2000, ge=100, description="Resamples for the bootstrap confidence intervals of run summaries."
    )
    eval_seed: int = Field(default=20240601, description="Seed of the bootstrap, so reports reproduce.")
    eval_watch_interval_s: float = Field(
        default=30.0, gt=0, description="Seconds between two polls of the target's config fingerprint."
    )
    eval_max_error_rate: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="Share of failed requests above which a run is stored as failed (never compared, "
        "never the evaluation of its config fingerprint).",
    )
    eval_git_sha: str | None = Field(
        default=None, description="Git commit recorded with a run; unset: `git rev-parse HEAD` of the cwd."
    )
    eval_docs_dir: Path | None = Field(
        default=None,
        description="Folder of <doc-id>.md files to check reference context ids against when syncing sets.",
    )
