"""What a comparison of two runs left out, in the words every report and the dashboard use."""

from evallens.reports import GateReportBody

MAX_NAMED = 5  # case keys named per note; the stored report lists them all


def left_out_notes(body: GateReportBody) -> list[tuple[str, str]]:
    """(label, sentence) for each kind of case the paired tests did not see: left unscored by the
    judge, edited between the runs' set versions, or only in one run's set version."""
    notes: list[tuple[str, str]] = []
    if body.num_unscored:
        counts = ", ".join(f"{metric} {count}" for metric, count in body.num_unscored.items())
        notes.append(("unscored", f"cases the judge left unscored, excluded from the paired tests: {counts}"))
    unpaired = "set version ({}), not compared"
    for label, keys, what in (
        ("edited", body.edited_cases, "edited between the runs' set versions, left out of the comparison"),
        ("added", body.candidate_only_cases, "only in the candidate's " + unpaired.format("added since")),
        ("removed", body.baseline_only_cases, "only in the baseline's " + unpaired.format("removed since")),
    ):
        if keys:
            more = len(keys) - MAX_NAMED
            named = ", ".join(keys[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "")
            notes.append((label, f"{len(keys)} case(s) {what}: {named}"))
    return notes
