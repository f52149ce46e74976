"""Knobs of ``evallens demo``; the components it starts read their own settings."""

from pydantic import Field

from evallens.settings._base import settings_config
from evallens.settings.database import DatabaseSettings
from evallens.settings.evals import MAX_TOKENS


class DemoSettings(DatabaseSettings):
    """What the demo changes between the baseline and the candidate, and how much it replays."""

    model_config = settings_config()

    demo_candidate_change: str = Field(
        default="EVALLENS_CACHE_SEMANTIC_THRESHOLD=0.35",
        description=(
            "The one setting the demo changes for the candidate, as NAME=VALUE of the reference "
            "service (like a pull request would): by default a semantic-cache threshold far below 0.95."
        ),
    )
    demo_eval_max_tokens: int = Field(
        default=96,
        ge=8,
        le=MAX_TOKENS,
        description="max_tokens of each eval request in the demo (keeps CPU runs short; at most 1,000,000).",
    )
    demo_eval_concurrency: int = Field(default=8, ge=1, description="Eval requests in flight at once.")
    demo_smoke_cases_per_scenario: int = Field(
        default=15, ge=1, description="Cases per scenario replayed by `evallens demo --smoke`."
    )
    demo_traffic_requests: int = Field(
        default=24, ge=1, description="Ordinary 'production' requests the demo sends before mining."
    )
    demo_retrieval_budget_ms: float = Field(
        default=2000.0,
        gt=0,
        description=(
            "Retrieval time budget of the demo's service. The service default (200 ms) suits a real "
            "server; on a small shared CPU most retrievals would miss it and answer degraded."
        ),
    )
    demo_ready_timeout_s: float = Field(
        default=900.0, gt=0, description="Seconds to wait for a component to become healthy."
    )
