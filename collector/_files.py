"""Durable files for the spool and the dead letters, and the lock that gives a directory one owner."""

import fcntl
import itertools
import os
import time
from pathlib import Path

from evallens.errors import EvallensError

LOCK_NAME = ".lock"
_counter = itertools.count()


class DirectoryInUse(EvallensError):
    """Another collector holds the directory (its spool would be replayed by two writers)."""


def write_atomically(directory: Path, data: bytes, suffix: str) -> Path:
    """Write ``data`` to a new file in ``directory``: temporary name, fsync, rename, fsync the directory.

    The file either holds all of ``data`` or does not exist; names sort oldest first.
    """
    name = f"{time.time_ns():020d}-{os.getpid()}-{next(_counter):06d}"
    temporary = directory / f"{name}.tmp"
    with open(temporary, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    final = temporary.with_suffix(suffix)
    temporary.rename(final)
    fsync_directory(directory)
    return final


def remove_durably(path: Path) -> int:
    """Delete ``path`` (gone already is fine) and fsync its directory; return the bytes it held."""
    try:
        size = path.stat().st_size
        path.unlink()
    except FileNotFoundError:
        return 0
    fsync_directory(path.parent)
    return size


def fsync_directory(directory: Path) -> None:
    """Make a rename or unlink in ``directory`` durable."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class DirectoryLock:
    """An exclusive ``flock`` on ``<directory>/.lock``, held until ``release`` or the process ends.

    The kernel drops the lock when the process dies (SIGKILL included), so a restart never finds a
    stale lock.
    """

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / LOCK_NAME
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(descriptor)
            raise DirectoryInUse(
                f"{directory} is in use by another collector (pid {holder}); give this one its own "
                "EVALLENS_COLLECTOR_SPOOL_DIR (or EVALLENS_DATA_DIR)"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, str(os.getpid()).encode(), 0)
        self._descriptor: int | None = descriptor

    def release(self) -> None:
        """Give the directory up."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None
