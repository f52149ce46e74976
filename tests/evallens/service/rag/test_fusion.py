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


def test_a_document_takes_at_most_its_cap_of_places_while_others_are_ranked() -> None:
    ranked = hits("a1", "a2", "a3", "a4", "b1", "c1")
    document_of = {item_id: item_id[0] for item_id in ("a1", "a2", "a3", "a4", "b1", "c1")}
    capped = top_k_keeping(ranked, set(), 4, document_of=document_of, max_per_document=2)
    assert [hit.id for hit in capped] == ["a1", "a2", "b1", "c1"]
    assert top_k_keeping(ranked, set(), 4, document_of=document_of, max_per_document=0) == ranked[:4]


def test_the_cap_counts_kept_hits_and_gives_way_when_too_few_documents_are_ranked() -> None:
    ranked = hits("a1", "a2", "a3", "b1", "a4")
    document_of = {item_id: item_id[0] for item_id in ("a1", "a2", "a3", "a4", "b1")}
    # a4 is a leg's best hit: it stays and fills one of a's two places
    kept = top_k_keeping(ranked, {"a4"}, 3, document_of=document_of, max_per_document=2)
    assert [hit.id for hit in kept] == ["a1", "b1", "a4"]
    # five places, two documents: a takes the places b cannot fill, best first
    assert top_k_keeping(ranked, set(), 5, document_of=document_of, max_per_document=1) == ranked
    short = top_k_keeping(ranked, set(), 3, document_of=document_of, max_per_document=1)
    assert [hit.id for hit in short] == ["a1", "a2", "b1"]
