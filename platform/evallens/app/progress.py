"""Renders components' progress: rich bars on a terminal, a plain line every few seconds elsewhere (CI)."""

import threading
import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from evallens.progress import ProgressReporter

PLAIN_INTERVAL_S = 10.0


class RateColumn(ProgressColumn):
    """Items per second (rich's own speed column counts bytes)."""

    def render(self, task: Task) -> Text:
        """The task's current rate."""
        speed = task.finished_speed or task.speed
        return Text("-/s" if speed is None else f"{speed:.1f}/s", style="progress.data.speed")


class TerminalProgress:
    """One rich progress bar per phase: done of total, failed, rate, ETA and the current item (a phase
    of unknown length is a spinner with its elapsed time, gone once the phase ends)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar: Progress | None = None
        self.failed = 0

    def begin(self, description: str, total: int | None = None) -> None:
        """Show a new bar (a spinner with elapsed time when the total is unknown)."""
        self.end()
        self.failed = 0
        if total is None:
            columns: list[ProgressColumn | str] = [
                SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()
            ]  # fmt: skip
        else:
            columns = [
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("failed {task.fields[failed]}"), RateColumn(), TimeRemainingColumn(),
                TextColumn("{task.fields[detail]}", markup=False),
            ]  # fmt: skip
        self.bar = Progress(*columns, console=self.console, transient=total is None)
        self.bar.start()
        self.bar.add_task(description, total=total, failed=0, detail="")

    def advance(self, *, failed: bool = False, detail: str = "") -> None:
        """Move the bar on by one item."""
        if self.bar is None:
            return
        self.failed += failed
        task = self.bar.task_ids[0]
        self.bar.update(task, advance=1, failed=self.failed, detail=detail)

    def end(self) -> None:
        """Leave the finished bar on screen and stop redrawing it."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


class PlainProgress:
    """Plain lines for logs: while a phase runs, a status line every ``interval_s`` seconds (even when
    no item finishes, so a hung step shows), and how it ended when it took that long. Short phases
    stay silent."""

    def __init__(self, console: Console, interval_s: float = PLAIN_INTERVAL_S) -> None:
        self.console = console
        self.interval_s = interval_s
        self.description = ""
        self.total: int | None = None
        self.done = self.failed = 0
        self.detail = ""
        self.started = 0.0
        self.lock = threading.Lock()
        self.stopped: threading.Event | None = None

    def begin(self, description: str, total: int | None = None) -> None:
        """Start counting and the heartbeat that prints the status."""
        self.end()
        with self.lock:
            self.description, self.total, self.done, self.failed, self.detail = description, total, 0, 0, ""
            self.started = time.monotonic()
        self.stopped = threading.Event()
        threading.Thread(target=self._heartbeat, args=(self.stopped,), daemon=True).start()

    def advance(self, *, failed: bool = False, detail: str = "") -> None:
        """Count the item."""
        with self.lock:
            self.done += 1
            self.failed += failed
            self.detail = detail

    def end(self) -> None:
        """Stop the heartbeat; say how the phase ended if it ran for ``interval_s`` or more."""
        if self.stopped is None:
            return
        self.stopped.set()
        self.stopped = None
        elapsed = time.monotonic() - self.started
        if elapsed >= self.interval_s:
            ended = f"finished in {elapsed:.0f} s"
            counted = self._counts_items()
            self._line(f"{self.status()}, {ended}" if counted else f"{self.description}: {ended}")

    def status(self) -> str:
        """``description: done/total done, failed, rate, ETA (current item)``; a phase that counts no
        items (no total, none done) says only how long it has run."""
        with self.lock:
            elapsed = max(time.monotonic() - self.started, 1e-9)
            if not self._counts_items():
                text = f"{self.description}: {elapsed:.0f} s elapsed"
                return f"{text} ({self.detail})" if self.detail else text
            rate = self.done / elapsed
            counted = f"{self.done}" if self.total is None else f"{self.done}/{self.total}"
            text = f"{self.description}: {counted} done, {self.failed} failed, {rate:.1f}/s"
            if self.total is not None and 0 < self.done < self.total:
                text += f", ETA {(self.total - self.done) / rate:.0f} s"
            elif self.total is None or self.done == 0:
                text += f", {elapsed:.0f} s elapsed"
            return f"{text} ({self.detail})" if self.detail else text

    def _counts_items(self) -> bool:
        return self.total is not None or self.done > 0

    def _heartbeat(self, stopped: threading.Event) -> None:
        while not stopped.wait(self.interval_s):
            self._line(self.status())

    def _line(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)


def progress_for(console: Console, interval_s: float = PLAIN_INTERVAL_S) -> ProgressReporter:
    """Bars when ``console`` is a terminal, plain lines every ``interval_s`` seconds when it is not."""
    if console.is_terminal:
        return TerminalProgress(console)
    return PlainProgress(console, interval_s)


def stderr_progress() -> ProgressReporter:
    """Progress on stderr, so a command's stdout stays its result (e.g. ``--json``)."""
    return progress_for(Console(stderr=True))
