"""How bad production cases are mined and deduplicated."""

from pydantic import Field
from pydantic_settings import BaseSettings

from evallens.settings._base import ProjectName, settings_config


class CasesSettings(BaseSettings):
    """Thresholds of ``evallens cases mine``."""

    model_config = settings_config()

    cases_duplicate_similarity: float = Field(
        default=0.85,
        gt=0.0,
        le=1.0,
        description="Questions whose all-MiniLM-L6-v2 cosine similarity reaches this are near-duplicates.",
    )
    cases_min_traces_for_outliers: int = Field(
        default=20,
        ge=2,
        description="Latency and cost outliers are only flagged when the window holds this many traces.",
    )
    cases_max_traces: int = Field(
        default=10_000,
        ge=1,
        description="Most flagged traces read from the window before ranking and deduplication.",
    )
    cases_max_embedded_questions: int = Field(
        default=200,
        ge=1,
        description="Most distinct questions, of the worst traces first, embedded to merge near-duplicates"
        " (the Cases page lists 200 candidates); traces asking others merge only with the same question.",
    )
    cases_project: ProjectName = Field(
        default="default",
        description="Project whose traces are mined and whose eval sets, runs, tags and gates every"
        " `evallens cases`, `evallens eval` and `evallens gate` command reads and writes.",
    )
