"""Signals held over a clean-up write: delivered after it, or at once when the user insists."""

import signal

import pytest

from evallens.signals import signals_held


def test_a_signal_during_the_block_is_delivered_after_it() -> None:
    steps = []
    with pytest.raises(KeyboardInterrupt), signals_held():
        signal.raise_signal(signal.SIGINT)
        steps.append("written")
    assert steps == ["written"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_signal_during_the_block_is_delivered_at_once() -> None:
    """The write is hanging (a database that does not answer): pressing Ctrl-C again must still stop it."""
    steps = []
    with pytest.raises(KeyboardInterrupt), signals_held():
        signal.raise_signal(signal.SIGINT)
        steps.append("first held")
        signal.raise_signal(signal.SIGINT)
        steps.append("written")
    assert steps == ["first held"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_block_without_signals_runs_as_is() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with signals_held():
        pass
    assert signal.getsignal(signal.SIGTERM) is before
