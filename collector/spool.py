"""The local spool: spans acknowledged while PostgreSQL was unreachable, fsync'd until written.

One file per flush (its COPY rows as the writer sends them), written to a temporary name, fsync'd,
renamed and the directory fsync'd, so a file either holds a whole batch or does not exist. Replays
are idempotent (the writer skips spans already stored), so a crash between a replay's commit and the
file's removal loses nothing and duplicates nothing. One collector owns the directory
(``DirectoryLock``); a second one refuses to start.

A batch holds one API key's project (``<name>.<project tag>.spool``, the tag a hash of the name), so
the bytes each project holds are known from the files alone, after a restart too, and a project
flooding the collector while PostgreSQL is away cannot fill the spool for every other project.
"""

import hashlib
import threading
from collections import Counter
from pathlib import Path

import orjson

from collector._files import remove_durably, write_atomically
from collector.copy_rows import BadRow, CopyRows, copy_rows, day_of
from collector.records import SpanRecord

SUFFIX = ".spool"
CORRUPT_SUFFIX = ".corrupt"


class SpoolFull(Exception):
    """The spool reached its size limit; new spans cannot be acknowledged."""


class SpoolShareTaken(SpoolFull):
    """The project's batches hold its share of the spool; other projects' spans still fit."""


def project_tag(project: str | None) -> str:
    """What a batch's file name says of its project ("" with auth off: no project)."""
    return hashlib.sha256(project.encode()).hexdigest()[:16] if project is not None else ""


def tag_of(path: Path) -> str:
    """The project tag in a batch's file name ("" for a batch of no project, or spooled before tags)."""
    return path.name.removesuffix(SUFFIX).partition(".")[2]


class Spool:
    """A directory of fsync'd span batches; one project may hold ``project_share`` of ``max_bytes``."""

    def __init__(self, directory: Path, max_bytes: int, project_share: float = 1.0) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.max_project_bytes = max_bytes * project_share
        directory.mkdir(parents=True, exist_ok=True)
        for leftover in directory.glob("*.tmp"):  # a crash mid-write: that batch was never acknowledged
            leftover.unlink()
        self._lock = threading.Lock()
        self.num_bytes = 0
        self._project_bytes: Counter[str] = Counter()
        for path in self.pending():
            self._resize(path, path.stat().st_size)
        self._refused = False

    @property
    def full(self) -> bool:
        """Whether the spool is at its size limit, or refused a batch since it last gave one back."""
        return self._refused or self.num_bytes >= self.max_bytes

    def share_taken(self, project: str) -> bool:
        """Whether ``project``'s batches hold its whole share of the spool."""
        return self._project_bytes[project_tag(project)] >= self.max_project_bytes

    def append(self, rows: CopyRows, project: str | None = None) -> Path:
        """Durably write ``rows``, all of ``project`` (an API key's; None with auth off); raise
        ``SpoolFull``, ``SpoolShareTaken`` or ``OSError`` when that is not possible. A project with
        nothing spooled may spool a batch of any size that fits."""
        data, tag = rows.data, project_tag(project)
        with self._lock:
            if self.num_bytes + len(data) > self.max_bytes:
                self._refused = True
                raise SpoolFull(f"spool {self.directory} is full ({self.num_bytes} bytes)")
            held = self._project_bytes[tag]
            if tag and held and held + len(data) > self.max_project_bytes:
                message = f"project {project!r} already holds its share of the spool ({held} bytes)"
                raise SpoolShareTaken(message)
            final = write_atomically(self.directory, data, f".{tag}{SUFFIX}" if tag else SUFFIX)
            self._resize(final, len(data))
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
            self._resize(path, -remove_durably(path))
            self._refused = False

    def set_aside(self, path: Path) -> Path:
        """Rename a batch that cannot be read, so it is kept for a person but no longer replayed."""
        with self._lock:
            size = path.stat().st_size
            target = path.with_suffix(CORRUPT_SUFFIX)
            path.rename(target)
            self._resize(path, -size)
        return target

    def _resize(self, path: Path, num_bytes: int) -> None:
        self.num_bytes += num_bytes
        tag = tag_of(path)
        if tag:
            self._project_bytes[tag] += num_bytes
            if not self._project_bytes[tag]:  # a key per project with batches spooled, no more
                del self._project_bytes[tag]
