"""The local spool: spans acknowledged while PostgreSQL was unreachable, fsync'd until written.

One file per flush (its COPY rows as the writer sends them), written to a temporary name, fsync'd,
renamed and the directory fsync'd, so a file either holds a whole batch or does not exist. Replays
are idempotent (the writer skips spans already stored), so a crash between a replay's commit and the
file's removal loses nothing and duplicates nothing. One collector owns the directory
(``DirectoryLock``); a second one refuses to start.
"""

import threading
from pathlib import Path

import orjson

from collector._files import remove_durably, write_atomically
from collector.copy_rows import BadRow, CopyRows, copy_rows, day_of
from collector.records import SpanRecord

SUFFIX = ".spool"
CORRUPT_SUFFIX = ".corrupt"


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
        self.num_bytes = sum(path.stat().st_size for path in self.pending())
        self._refused = False

    @property
    def full(self) -> bool:
        """Whether the spool is at its size limit, or refused a batch since it last gave one back."""
        return self._refused or self.num_bytes >= self.max_bytes

    def append(self, rows: CopyRows) -> Path:
        """Durably write ``rows``; raise ``SpoolFull`` or ``OSError`` when that is not possible."""
        data = rows.data
        with self._lock:
            if self.num_bytes + len(data) > self.max_bytes:
                self._refused = True
                raise SpoolFull(f"spool {self.directory} is full ({self.num_bytes} bytes)")
            final = write_atomically(self.directory, data, SUFFIX)
            self.num_bytes += len(data)
        return final

    def pending(self) -> list[Path]:
        """Spooled batches, oldest first."""
        return sorted(self.directory.glob(f"*{SUFFIX}"))

    @staticmethod
    def read(path: Path) -> CopyRows:
        """The rows of one spooled batch, each checked; ``ValueError`` when the file is not one."""
        data = path.read_bytes()
        try:
            if data.startswith(b"["):  # written by a collector before COPY rows were spooled
                return copy_rows(SpanRecord(*values) for values in orjson.loads(data))
            if not data.endswith(b"\n"):
                raise BadRow("the last row is cut short")
            records = CopyRows(data, data.count(b"\n")).records()  # each row checked
            return CopyRows(data, len(records), tuple(sorted({day_of(r.start_time_ns) for r in records})))
        except (BadRow, orjson.JSONDecodeError, TypeError) as error:
            raise ValueError(f"{path} is not a spooled batch: {error}") from None

    def remove(self, path: Path) -> None:
        """Forget a batch once it is committed to PostgreSQL."""
        with self._lock:
            self.num_bytes -= remove_durably(path)
            self._refused = False

    def set_aside(self, path: Path) -> Path:
        """Rename a batch that cannot be read, so it is kept for a person but no longer replayed."""
        with self._lock:
            size = path.stat().st_size
            target = path.with_suffix(CORRUPT_SUFFIX)
            path.rename(target)
            self.num_bytes -= size
        return target
