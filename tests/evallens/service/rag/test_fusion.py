"""Reciprocal Rank Fusion on rankings whose fused scores are known by hand."""

import pytest

from evallens.service.rag import reciprocal_rank_fusion


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
