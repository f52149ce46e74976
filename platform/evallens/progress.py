"""How long work reports its progress: components call a ``ProgressReporter``; the entry layer renders it.

A component never prints a bar itself. It takes a reporter (``NO_PROGRESS`` by default), starts a
phase with a description and, when it knows one, a total, and advances it once per item (a case
replayed, a document loaded, a trace judged), saying whether the item failed and what it was
(e.g. the case's scenario). The commands and the demo pass a reporter that draws a rich progress
bar on a terminal and prints a plain line every few seconds elsewhere (CI logs).
"""

import contextlib
from collections.abc import Iterator
from typing import Protocol


class ProgressReporter(Protocol):
    """Receives the phases and items of long work."""

    def begin(self, description: str, total: int | None = None) -> None:
        """Start a phase: ``total`` items, or ``None`` when the amount of work is unknown."""

    def advance(self, *, failed: bool = False, detail: str = "") -> None:
        """One item of the current phase is done; ``failed`` counts it as failed, ``detail`` names it."""

    def end(self) -> None:
        """The current phase is over."""


class NoProgress:
    """A reporter that shows nothing: the default for library calls and tests."""

    def begin(self, description: str, total: int | None = None) -> None:
        """Nothing to show."""

    def advance(self, *, failed: bool = False, detail: str = "") -> None:
        """Nothing to show."""

    def end(self) -> None:
        """Nothing to show."""


NO_PROGRESS: ProgressReporter = NoProgress()


@contextlib.contextmanager
def phase(reporter: ProgressReporter, description: str, total: int | None = None) -> Iterator[None]:
    """``begin`` a phase and ``end`` it however the block leaves."""
    reporter.begin(description, total)
    try:
        yield
    finally:
        reporter.end()


__all__ = ["NO_PROGRESS", "NoProgress", "ProgressReporter", "phase"]
