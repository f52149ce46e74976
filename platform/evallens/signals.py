"""SIGTERM as an orderly exit: a long-running command ends through its clean-up, as on Ctrl-C."""

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn

HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)
Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


def exit_on_signal(signum: int, _frame: FrameType | None) -> NoReturn:
    """A signal handler that raises ``SystemExit(128 + signum)`` in the main thread.

    SIGTERM's default ends the process at once: no ``finally`` runs, so an embedded PostgreSQL the
    command started, or a child in its own session, is left running. Raised as an exception, the
    signal unwinds the command (its ``with`` blocks stop what they started) and still exits with the
    status a shell reports for it (143 for SIGTERM).
    """
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM during a short clean-up write that must not stop half-way (a run being
    marked failed after Ctrl-C), then deliver the first one held.

    Ctrl-C pressed twice otherwise stops the write that records the first, and the run stays
    ``running`` forever. A second signal during the block is delivered at once: the write is taking
    too long (a database that does not answer) and the user insists. Outside the main thread, where
    Python runs no signal handler, the block runs as is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Handler] = {number: signal.getsignal(number) for number in HELD_SIGNALS}
    held: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        held.append(signum)
        if len(held) > 1:
            _restore(previous)
            signal.raise_signal(signum)

    for number in HELD_SIGNALS:
        signal.signal(number, hold)
    try:
        yield
    finally:
        delivered = len(held) > 1
        _restore(previous)
        if held and not delivered:
            signal.raise_signal(held[0])


def _restore(previous: dict[int, Handler]) -> None:
    for number, handler in previous.items():
        signal.signal(number, handler if handler is not None else signal.SIG_DFL)
