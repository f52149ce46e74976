"""User-facing failures of the eval engine: each reaches the CLI as one line and exit code 2."""

from evallens.errors import EvallensError


class EvalSetError(EvallensError):
    """An eval-set file is malformed, or a case references something that does not exist."""


class EndpointUnreachable(EvallensError):
    """The target (or judge) endpoint cannot be reached or does not speak the expected protocol."""


class EvalConfigError(EvallensError):
    """Eval settings that cannot work together (e.g. a judge mode without a judge endpoint)."""


class CalibrationError(EvallensError):
    """A label file that cannot be read: one line naming the file, the line number and the problem."""


class RunFailed(EvallensError):
    """A run stored as failed: too many requests failed, so it is no evaluation of its target."""

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(f"run {run_id} failed: {reason}")
        self.run_id = run_id
        self.reason = reason


class ScoredDifferently(EvallensError):
    """Two runs whose answers were scored by different metrics (code, thresholds, judge or classifier):
    a difference in their scores could be the metrics', not the target's."""


class NothingCompared(EvallensError):
    """Two runs with no case scored in both on some metric they scored: a verdict would pass it untested."""


class ReportNotWritten(EvallensError):
    """A report folder that cannot be created or written (a path under a file, no permission, disk full)."""
