"""How two runs' scoring differs: what the gate refuses on and the dashboard marks."""

from collections.abc import Mapping

_ABSENT = object()  # a key one description lacks differs from the other's, even from its None


def scoring_differences(before: Mapping[str, object] | None, after: Mapping[str, object] | None) -> list[str]:
    """The keys of two stored scoring descriptions (``eval_runs.scoring``) whose values differ, sorted;
    a run stored before runs recorded their scoring (None) differs in every key the other records."""
    before, after = before or {}, after or {}
    return sorted(
        key for key in before.keys() | after.keys() if before.get(key, _ABSENT) != after.get(key, _ABSENT)
    )
