"""How many export requests are served at once, and how many of them one API key's project may hold.

Used by OTLP/HTTP (``collector.api``) and OTLP/gRPC (``collector.grpc_service``), each with slots of
its own. A slot is taken once the request's API key is accepted, so clients with no key or a wrong one
never hold any; and one project holds at most ``project_share`` of them (its one request always may),
so its slow uploads, each held up to the body timeout (gRPC: the connection age), never hold them
from every other project. What the servers offer counts too early: uvicorn's ``limit_concurrency``
every open connection, keyless ones too; gRPC's ``maximum_concurrent_rpcs`` every call from its start,
and it refuses with no ``RetryInfo``, which OTLP exporters take as final.
"""

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RequestSlots", "SlotsTaken"]


class SlotsTaken(Exception):
    """No slot for a request now: every one is taken, or (``share_taken``) its project holds its share;
    the client should come back after ``retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int, share_taken: bool) -> None:
        super().__init__(message)
        self.retry_after_s, self.share_taken = retry_after_s, share_taken


class RequestSlots:
    """``limit`` requests served at once (None: no limit), at most ``project_share`` of them one
    project's. Safe to share between threads and an event loop (the lock is never held while waiting)."""

    def __init__(self, limit: int | None, retry_after_s: int, project_share: float = 1.0) -> None:
        self.limit, self.retry_after_s, self.project_share = limit, retry_after_s, project_share
        self.num_taken = 0
        self._project_slots: Counter[str] = Counter()
        self._lock = threading.Lock()

    @contextmanager
    def take(self, project: str | None = None) -> Iterator[None]:
        """Hold one slot while the block runs (``project``: the API key's, None with auth off); raises
        ``SlotsTaken`` when none is free or the project holds its share."""
        self._take(project)
        try:
            yield
        finally:
            self._give_back(project)

    def _take(self, project: str | None) -> None:
        with self._lock:
            if self.limit is not None and self.num_taken >= self.limit:
                message = f"the collector is serving {self.limit} requests already"
                raise SlotsTaken(message, self.retry_after_s, share_taken=False)
            held = self._project_slots[project] if project is not None else 0
            if self.limit is not None and held and held + 1 > self.limit * self.project_share:
                message = (
                    f"project {project!r} already has {held} requests being served, its share of the "
                    f"collector's {self.limit}"
                )
                raise SlotsTaken(message, self.retry_after_s, share_taken=True)
            self.num_taken += 1
            if project is not None:
                self._project_slots[project] += 1

    def _give_back(self, project: str | None) -> None:
        with self._lock:
            self.num_taken -= 1
            if project is not None:
                self._project_slots[project] -= 1
                if not self._project_slots[project]:  # a key per project being served, no more
                    del self._project_slots[project]
