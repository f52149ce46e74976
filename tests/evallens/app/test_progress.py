"""Progress as the commands and the demo render it: bars on a terminal, plain lines in logs."""

import io
import time

from rich.console import Console

from evallens.app.progress import PlainProgress, TerminalProgress, progress_for
from evallens.progress import phase


def wait_for(predicate: object, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


def test_a_terminal_gets_a_bar_with_counts_failures_and_the_current_item() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160, color_system=None)
    reporter = progress_for(console)
    assert isinstance(reporter, TerminalProgress)
    with phase(reporter, "replaying 3 cases", 3):
        reporter.advance(detail="returns_refunds")
        reporter.advance(failed=True, detail="out_of_scope")
        reporter.advance(detail="harmful")
    text = out.getvalue()
    final = text[text.rindex("replaying 3 cases") :].splitlines()[0]  # the last frame drawn
    assert "replaying 3 cases" in final and "3/3" in final and "failed 1" in final
    assert "/s" in final and "harmful" in final


def test_piped_output_gets_a_line_every_interval_while_a_phase_runs() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80)
    reporter = progress_for(console, interval_s=0.05)
    assert isinstance(reporter, PlainProgress)
    reporter.begin("replaying 4 cases", 4)
    reporter.advance(detail="returns_refunds")
    reporter.advance(failed=True, detail="out_of_scope")
    wait_for(lambda: "2/4 done, 1 failed" in out.getvalue())
    reporter.advance()
    reporter.advance()
    wait_for(lambda: "4/4 done" in out.getvalue())
    reporter.end()
    lines = out.getvalue().splitlines()
    progress_line = next(line for line in lines if "2/4 done" in line)
    assert "ETA" in progress_line and "(out_of_scope)" in progress_line
    assert lines[-1].startswith("replaying 4 cases: 4/4 done, 1 failed") and "finished in" in lines[-1]


def test_a_phase_with_no_items_still_says_it_is_alive_so_a_hang_shows() -> None:
    """It says how long it has run, not "0 done, 0 failed" of items it never counts."""
    out = io.StringIO()
    reporter = PlainProgress(Console(file=out, width=80), interval_s=0.05)
    reporter.begin("waiting for the spans of 3 traces")
    wait_for(lambda: "elapsed" in out.getvalue())  # a heartbeat: the phase has run for an interval
    reporter.end()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("waiting for the spans of 3 traces: ") and lines[0].endswith(" s elapsed")
    assert lines[-1].startswith("waiting for the spans of 3 traces: finished in ")
    assert not any("done" in line or "failed" in line for line in lines), lines


def test_short_phases_stay_silent_in_logs() -> None:
    out = io.StringIO()
    reporter = PlainProgress(Console(file=out, width=80), interval_s=60)
    with phase(reporter, "judging 2 flagged traces", 2):
        reporter.advance()
        reporter.advance()
    assert out.getvalue() == ""
