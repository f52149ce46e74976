"""Stored eval runs, as every component finds them: by id or tag, the latest completed one of a
configuration, their baseline, their results, the cases that got worse between two runs, what differs
in how two runs were scored and what a comparison of them left out; and whether a run still 'running'
has a process. The JSON stored on runs and gates is ``evallens.reports``."""

from evallens.runs.flips import MAX_FLIPS, flipped_cases
from evallens.runs.left_out import left_out_notes
from evallens.runs.listing import RunListing, list_runs
from evallens.runs.liveness import ABANDONED, fail_abandoned_runs, hold_run_lock
from evallens.runs.resolve import (
    MAIN_TAG,
    RunNotFound,
    RunRef,
    baseline_of,
    check_tag,
    latest_completed_run,
    resolve_run,
    tag_run,
)
from evallens.runs.results import StoredResult, edited_cases, load_results
from evallens.runs.scoring import scoring_differences

__all__ = [
    "ABANDONED",
    "MAIN_TAG",
    "MAX_FLIPS",
    "RunNotFound",
    "RunListing",
    "RunRef",
    "StoredResult",
    "baseline_of",
    "check_tag",
    "edited_cases",
    "fail_abandoned_runs",
    "flipped_cases",
    "hold_run_lock",
    "latest_completed_run",
    "left_out_notes",
    "list_runs",
    "load_results",
    "resolve_run",
    "scoring_differences",
    "tag_run",
]
