"""Build the scoring context from settings: the local embedding model and, if configured, a judge."""

from evallens.settings import EvalSettings
from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics.result import Judge, ScoringContext, Similarity


def build_scoring_context(settings: EvalSettings, similarity: Similarity | None = None) -> ScoringContext:
    """A ``ScoringContext`` with all-MiniLM-L6-v2 and the judge named by the settings, if any."""
    judge: Judge | None = None
    if settings.eval_judge_endpoint:
        from evals.metrics._judge import RagasJudge

        model = settings.eval_judge_model or "judge"
        judge = RagasJudge(settings.eval_judge_endpoint, model, settings.eval_judge_api_key)
    return ScoringContext(
        similarity=similarity or MiniLmSimilarity(),
        similarity_threshold=settings.eval_similarity_threshold,
        relevance_threshold=settings.eval_relevance_threshold,
        recall_k=settings.eval_recall_k,
        judge=judge,
        judge_only=settings.eval_judge_mode == "judge",
    )
