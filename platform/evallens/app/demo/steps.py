"""Step-by-step progress with timings; a failing step says which step, why, and where the log is."""

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console

from evallens.errors import EvallensError


class StepFailed(EvallensError):
    """A demo step failed; the message names the step."""


@dataclass
class StepLog:
    """Prints each step as it starts and ends, and keeps the timings."""

    console: Console = field(default_factory=Console)
    timings: list[tuple[str, float]] = field(default_factory=list)

    @contextmanager
    def step(self, title: str) -> Iterator[Callable[[str], None]]:
        """Run one step: yields a ``note(text)`` function for details shown under the step."""
        number = len(self.timings) + 1
        self.console.print(f"[bold]{number}. {title}[/bold]")
        started = time.monotonic()

        def note(text: str) -> None:
            self.console.print(f"   {text}")

        try:
            yield note
        except EvallensError as error:
            raise StepFailed(f"step {number} ({title}) failed: {error}") from None
        elapsed = time.monotonic() - started
        self.timings.append((title, elapsed))
        self.console.print(f"   [green]done[/green] in {elapsed:.1f} s")

    def summary(self) -> str:
        """One line with the total time."""
        total = sum(seconds for _, seconds in self.timings)
        return f"{len(self.timings)} steps in {total:.1f} s"
