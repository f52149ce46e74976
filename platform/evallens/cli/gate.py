"""``evallens gate``: the CI gate (exit 0 pass, 1 regression, 2 error)."""

from evallens.cli._common import not_built


def gate() -> None:
    """Compare a candidate run against a baseline and fail on significant regressions."""
    not_built("gate")
