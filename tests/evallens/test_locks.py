"""``one_at_a_time``: a second holder waits, says so, and goes on once the first has left."""

import threading
from pathlib import Path

from evallens.locks import one_at_a_time
from evallens.progress import NoProgress


class Phases(NoProgress):
    """Records the phases a waiter begins."""

    def __init__(self) -> None:
        self.begun: list[str] = []

    def begin(self, description: str, total: int | None = None) -> None:
        self.begun.append(description if total is None else f"{description} ({total})")


def test_a_second_holder_waits_until_the_first_leaves(tmp_path: Path) -> None:
    lock = tmp_path / "models" / ".harm-classifier.lock"  # its folder need not exist yet
    events: list[str] = []
    inside, leave = threading.Event(), threading.Event()
    phases = Phases()

    def first() -> None:
        with one_at_a_time(lock):
            events.append("first in")
            inside.set()
            leave.wait(10)
            events.append("first out")

    def second() -> None:
        with one_at_a_time(lock, waiting="waiting for the first", progress=phases):
            events.append("second in")

    holder = threading.Thread(target=first)
    holder.start()
    assert inside.wait(10)
    waiter = threading.Thread(target=second)
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and events == ["first in"]  # blocked while the first holds it
    leave.set()
    holder.join(10)
    waiter.join(10)
    assert events == ["first in", "first out", "second in"]
    assert phases.begun == ["waiting for the first"]
    with one_at_a_time(lock, progress=phases):  # free again: no wait
        pass
    assert phases.begun == ["waiting for the first"]
