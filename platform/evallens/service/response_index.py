"""Which trace answered which response id: chat remembers each answer, feedback looks them up."""

import threading
from collections import OrderedDict

REMEMBERED_RESPONSES = 10_000


class ResponseIndex:
    """The trace ids of the most recent answers by response id (bounded; thread-safe)."""

    def __init__(self, max_entries: int = REMEMBERED_RESPONSES) -> None:
        self._max_entries = max_entries
        self._traces: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, response_id: str, trace_id: str) -> None:
        """Map ``response_id`` to its trace."""
        with self._lock:
            self._traces[response_id] = trace_id
            while len(self._traces) > self._max_entries:
                self._traces.popitem(last=False)

    def trace_of(self, response_id: str) -> str | None:
        """The trace of ``response_id``, if this process still remembers it."""
        with self._lock:
            return self._traces.get(response_id)
