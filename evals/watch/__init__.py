"""``evallens eval watch``: wait for a ready target, replay on every config change, gate each run."""

from evals.watch.loop import WatchOptions, WatchOutcome, verdict_lines, watch
from evals.watch.probe import Probe, check_ready, probe, watched_fingerprint

__all__ = [
    "Probe",
    "WatchOptions",
    "WatchOutcome",
    "check_ready",
    "probe",
    "verdict_lines",
    "watch",
    "watched_fingerprint",
]
