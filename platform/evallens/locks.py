"""Work two processes must not do at once (training a model into one folder, say), one at a time."""

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from evallens.progress import NO_PROGRESS, ProgressReporter, phase


@contextlib.contextmanager
def one_at_a_time(
    lock_file: Path, *, waiting: str = "waiting for another process", progress: ProgressReporter = NO_PROGRESS
) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_file`` (created if missing) for the block; while another
    process holds it, wait, shown on ``progress`` as ``waiting``. The kernel drops the lock when its
    holder ends, however it ends, so a lock is never stale."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with phase(progress, waiting):
                fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


__all__ = ["one_at_a_time"]
