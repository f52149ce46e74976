"""Reciprocal Rank Fusion on rankings whose fused scores are known by hand; keeping each leg's best hit."""

import pytest

from evallens.service.rag import ScoredId, reciprocal_rank_fusion
from evallens.service.rag.fusion import top_k_keeping


def test_rrf_scores_and_order_match_the_formula() -> None:
    vector = ["a", "b", "c"]
    keyword = ["c", "d", "a"]
    fused = reciprocal_rank_fusion([vector, keyword], k=60)
    expected = {
        "a": 1 / 61 + 1 / 63,
        "b": 1 / 62,
        "c": 1 / 63 + 1 / 61,
        "d": 1 / 62,
    }
    assert {hit.id: hit.score for hit in fused} == pytest.approx(expected)
    # a and c tie (first seen decides), then b and d tie.
    assert [hit.id for hit in fused] == ["a", "c", "b", "d"]


def test_a_document_in_both_legs_beats_a_single_top_rank() -> None:
    fused = reciprocal_rank_fusion([["x", "shared"], ["y", "shared"]], k=60)
    assert fused[0].id == "shared"
    assert fused[0].score == pytest.approx(2 / 62)


def test_k_changes_how_much_rank_matters() -> None:
    rankings = [["a", "b"], ["b", "c"], ["a", "c"]]
    assert [hit.id for hit in reciprocal_rank_fusion(rankings, k=1)] == ["a", "b", "c"]
    scores = {hit.id: hit.score for hit in reciprocal_rank_fusion(rankings, k=1)}
    assert scores["a"] == pytest.approx(1 / 2 + 1 / 2)
    assert scores["b"] == pytest.approx(1 / 3 + 1 / 2)
    assert scores["c"] == pytest.approx(1 / 3 + 1 / 3)


def test_empty_rankings_fuse_to_nothing() -> None:
    assert reciprocal_rank_fusion([], k=60) == []
    assert reciprocal_rank_fusion([[], []], k=60) == []


def hits(*ids: str) -> list[ScoredId]:
    return [ScoredId(item_id, 1.0 / (60 + rank)) for rank, item_id in enumerate(ids, start=1)]


def test_a_kept_hit_below_the_top_k_takes_the_place_of_the_lowest_other() -> None:
    ranked = hits("a", "b", "c", "d", "e")
    assert [hit.id for hit in top_k_keeping(ranked, {"e"}, 3)] == ["a", "b", "e"]
    assert [hit.id for hit in top_k_keeping(ranked, {"d", "e"}, 3)] == ["a", "d", "e"]
    assert top_k_keeping(ranked, {"e"}, 3)[-1] == ranked[-1]


def test_kept_hits_already_in_the_top_k_or_not_ranked_change_nothing() -> None:
    ranked = hits("a", "b", "c", "d")
    assert top_k_keeping(ranked, {"b"}, 2) == ranked[:2]
    assert top_k_keeping(ranked, {"gone"}, 2) == ranked[:2]
    assert top_k_keeping(ranked, set(), 10) == ranked


def test_more_kept_hits_than_places_keep_the_best_ranked_of_them() -> None:
    ranked = hits("a", "b", "c", "d")
    assert [hit.id for hit in top_k_keeping(ranked, {"b", "c", "d"}, 2)] == ["b", "c"]
