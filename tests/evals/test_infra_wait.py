"""A run's serving figures are computed once, after the target's spans arrived: ``await_spans``."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import Span
from evallens.db.partitions import create_span_partitions
from evals.infra import spans as infra_spans
from evals.infra.spans import await_spans

RUN = "0f0f0f0f-0000-4000-8000-000000000001"
TRACES = [f"{index:032x}" for index in range(1, 5)]


def store(sessions: sessionmaker[Session], trace_ids: list[str], project: str = "default") -> None:
    now = datetime.now(UTC)
    with sessions.begin() as session:
        create_span_partitions(session.connection(), [now.date()])
        session.add_all(
            Span(
                project=project, trace_id=trace_id, span_id=trace_id[-16:], parent_span_id=None,
                name="chat", kind=2, status_code=1, attributes={}, resource={}, events=[],
                start_time=now - timedelta(seconds=1), end_time=now, duration_ms=1000.0, eval_run_id=RUN,
            )
            for trace_id in trace_ids
        )  # fmt: skip


class Clock:
    """Time that moves a second per reading; sleeping is counted, not waited."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.sleeps += 1


def test_waits_while_the_spans_keep_arriving(sessions: sessionmaker[Session]) -> None:
    store(sessions, TRACES[:1])
    late = threading.Timer(1.0, store, args=(sessions, TRACES[1:]))
    late.start()
    try:
        assert await_spans(sessions, RUN, "default", TRACES, timeout_s=60) == len(TRACES)
    finally:
        late.join()


def test_the_first_span_may_come_after_the_run_ended(sessions: sessionmaker[Session]) -> None:
    # Replies from a cache end a run before the target's first export (every 5 s by default).
    late = threading.Timer(1.0, store, args=(sessions, TRACES))
    late.start()
    try:
        assert await_spans(sessions, RUN, "default", TRACES, timeout_s=60) == len(TRACES)
    finally:
        late.join()


def test_a_short_wait_when_no_span_of_the_run_reaches_this_database(
    sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    store(sessions, TRACES, project="other")  # another project's spans never count
    clock = Clock()
    monkeypatch.setattr(infra_spans, "time", clock)
    assert await_spans(sessions, RUN, "default", TRACES, timeout_s=10_000) == 0
    assert 0 < clock.sleeps <= infra_spans.SETTLE_S  # one export period, not the timeout
    clock.sleeps = 0
    assert await_spans(sessions, RUN, "default", [], timeout_s=60) == 0
    assert clock.sleeps == 0  # the target reported no trace: nothing is coming


def test_stops_when_the_rest_stops_coming(
    sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    store(sessions, TRACES[:2])
    clock = Clock()
    monkeypatch.setattr(infra_spans, "time", clock)
    assert await_spans(sessions, RUN, "default", TRACES, timeout_s=10_000) == 2
    # no progress for SETTLE_S (7 s): it gave up long before the timeout
    assert 0 < clock.sleeps <= infra_spans.SETTLE_S
