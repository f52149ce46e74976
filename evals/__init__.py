"""Eval engine: eval sets, metrics, runner, statistics, comparison and the CI gate."""

__all__: list[str] = []
