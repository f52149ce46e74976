"""What differs between two runs' stored scoring descriptions (``scoring_differences``)."""

from evallens.runs import scoring_differences

SCORING: dict[str, object] = {
    "metrics_code": "abc",
    "similarity": "MiniLmSimilarity",
    "settings": {"similarity_threshold": 0.225, "judge_mode": "rules"},
    "judge": None,
    "harm_classifier": None,
}


def test_equal_descriptions_and_two_unrecorded_runs_do_not_differ() -> None:
    assert scoring_differences(SCORING, dict(SCORING)) == []
    assert scoring_differences(None, None) == []


def test_the_keys_whose_values_differ_sorted_nested_values_compared_whole() -> None:
    changed = {
        **SCORING,
        "settings": {"similarity_threshold": 0.3, "judge_mode": "rules"},
        "harm_classifier": "manifest 0123",
    }
    assert scoring_differences(SCORING, changed) == ["harm_classifier", "settings"]
    assert scoring_differences(changed, SCORING) == ["harm_classifier", "settings"]


def test_a_key_only_one_side_records_differs_even_when_the_other_s_is_none() -> None:
    older = {key: value for key, value in SCORING.items() if key not in {"similarity", "judge"}}
    assert scoring_differences(older, SCORING) == ["judge", "similarity"]


def test_an_unrecorded_run_differs_from_a_recorded_one_in_every_key() -> None:
    keys = sorted(SCORING)
    assert scoring_differences(None, SCORING) == keys
    assert scoring_differences(SCORING, None) == keys
