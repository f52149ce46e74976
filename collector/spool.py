"""The local spool: spans acknowledged while PostgreSQL was unreachable, fsync'd until written.

One file per flush, written to a temporary name, fsync'd, renamed and the directory fsync'd, so a
file either holds a whole batch or does not exist. Replays are idempotent (the writer skips spans
already stored), so a crash between a replay's commit and the file's removal loses nothing and
duplicates nothing.
"""

import itertools
import os
import threading
import time
from dataclasses import fields
from pathlib import Path

import orjson

from collector.records import SpanRecord

SUFFIX = ".spool"
_FIELDS = tuple(field.name for field in fields(SpanRecord))


class SpoolFull(Exception):
    """The spool reached its size limit; new spans cannot be acknowledged."""


class Spool:
    """A directory of fsync'd span batches."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        directory.mkdir(parents=True, exist_ok=True)
        for leftover in directory.glob("*.tmp"):  # a crash mid-write: that batch was never acknowledged
            leftover.unlink()
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self.num_bytes = sum(path.stat().st_size for path in self.pending())

    def append(self, spans: list[SpanRecord]) -> Path:
        """Durably write ``spans``; raise ``SpoolFull`` or ``OSError`` when that is not possible."""
        data = orjson.dumps([[getattr(span, name) for name in _FIELDS] for span in spans])
        with self._lock:
            if self.num_bytes + len(data) > self.max_bytes:
                raise SpoolFull(f"spool {self.directory} is full ({self.num_bytes} bytes)")
            name = f"{time.time_ns():020d}-{os.getpid()}-{next(self._counter):06d}"
            temporary = self.directory / f"{name}.tmp"
            with open(temporary, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            final = temporary.with_suffix(SUFFIX)
            temporary.rename(final)
            _fsync_directory(self.directory)
            self.num_bytes += len(data)
        return final

    def pending(self) -> list[Path]:
        """Spooled batches, oldest first."""
        return sorted(self.directory.glob(f"*{SUFFIX}"))

    @staticmethod
    def read(path: Path) -> list[SpanRecord]:
        """The spans of one spooled batch."""
        return [SpanRecord(*values) for values in orjson.loads(path.read_bytes())]

    def remove(self, path: Path) -> None:
        """Forget a batch once it is committed to PostgreSQL."""
        with self._lock:
            size = path.stat().st_size
            path.unlink()
            _fsync_directory(self.directory)
            self.num_bytes -= size


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
