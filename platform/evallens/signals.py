"""SIGTERM as an orderly exit: a long-running command ends through its clean-up, as on Ctrl-C."""

from types import FrameType
from typing import NoReturn


def exit_on_signal(signum: int, _frame: FrameType | None) -> NoReturn:
    """A signal handler that raises ``SystemExit(128 + signum)`` in the main thread.

    SIGTERM's default ends the process at once: no ``finally`` runs, so an embedded PostgreSQL the
    command started, or a child in its own session, is left running. Raised as an exception, the
    signal unwinds the command (its ``with`` blocks stop what they started) and still exits with the
    status a shell reports for it (143 for SIGTERM).
    """
    raise SystemExit(128 + signum)
