"""Recall@k on cited ids, and its agreement with ragas' ID-based context recall."""

import pytest

from evals.metrics import recall
from evals.metrics.result import Answer, ScoringContext
from tests.evals.metrics.conftest import case

RETURN_CASE = case(
    "How many days do I have to return an unopened item?",
    "You can return unopened items within 30 days of delivery for a full refund.",
    ["30 days"],
    reference_context_ids=["returns-policy", "refund-timing"],
)
OUT_OF_SCOPE = case("Who won the 1998 World Cup?", expected="decline")


def test_recall_at_k_maps_chunks_to_documents(context: ScoringContext) -> None:
    both = Answer("...", retrieved_ids=["returns-policy#2", "refund-timing#0", "returns-policy#1"])
    assert recall.score(RETURN_CASE, both, context).score == 1.0
    half = Answer("...", retrieved_ids=["shipping-rates#0", "returns-policy#3"])
    assert recall.score(RETURN_CASE, half, context).score == 0.5
    narrow = ScoringContext(similarity=context.similarity, recall_k=1)
    assert recall.score(RETURN_CASE, half, narrow).score == 0.0
    assert not recall.score(OUT_OF_SCOPE, half, context).applies


# ragas reads its telemetry id file without closing it (third-party; the warning is about that file only)
@pytest.mark.filterwarnings(
    r"ignore:Exception ignored in.*ragas/uuid\.json:pytest.PytestUnraisableExceptionWarning"
)
def test_recall_agrees_with_ragas_id_based_context_recall(context: ScoringContext) -> None:
    import asyncio

    from ragas.dataset_schema import SingleTurnSample
    from ragas.metrics._context_recall import IDBasedContextRecall

    retrieved = ["returns-policy", "shipping-rates", "warranty"]
    ragas_score = asyncio.run(
        IDBasedContextRecall().single_turn_ascore(
            SingleTurnSample(
                retrieved_context_ids=retrieved, reference_context_ids=RETURN_CASE.reference_context_ids
            )
        )
    )
    ours = recall.score(RETURN_CASE, Answer("...", retrieved_ids=retrieved), context).score
    assert ours == pytest.approx(ragas_score) == 0.5
