"""Which trace answered which response id, and for which project: chat remembers each answer, feedback
looks them up (and never lets one project rate another project's answer)."""

import threading
from collections import OrderedDict
from typing import NamedTuple

REMEMBERED_RESPONSES = 10_000


class Answer(NamedTuple):
    """An answer's trace, and the API key's project it was given to (None without auth)."""

    trace_id: str
    project: str | None


class ResponseIndex:
    """The traces and projects of the most recent answers, by response id and by trace id (bounded;
    thread-safe)."""

    def __init__(self, max_entries: int = REMEMBERED_RESPONSES) -> None:
        self._max_entries = max_entries
        self._answers: OrderedDict[str, Answer] = OrderedDict()
        self._projects: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def remember(self, response_id: str, trace_id: str, project: str | None = None) -> None:
        """Map ``response_id`` to its trace and ``project``."""
        with self._lock:
            self._answers[response_id] = Answer(trace_id, project)
            self._projects[trace_id] = project
            while len(self._answers) > self._max_entries:
                _, forgotten = self._answers.popitem(last=False)
                self._projects.pop(forgotten.trace_id, None)

    def trace_of(self, response_id: str, project: str | None = None) -> str | None:
        """The trace of ``response_id``, if this process still remembers it and, asked for a project,
        it was that project's answer."""
        with self._lock:
            answer = self._answers.get(response_id)
        if answer is None or (project is not None and answer.project != project):
            return None
        return answer.trace_id

    def answered_elsewhere(self, trace_id: str, project: str | None) -> bool:
        """Whether this process remembers ``trace_id`` as an answer given to a project other than
        ``project`` (always False without a project: without auth there is nothing to vouch for)."""
        with self._lock:
            known = trace_id in self._projects
            owner = self._projects.get(trace_id)
        return project is not None and known and owner != project
