"""Two writers of one set at once (two reviewers on the Cases page, a script beside them): each stores
its own version on top of the other's, or gets the one clear error a second, later call gets."""

import threading
import time
from collections.abc import Callable

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from evallens import cases
from evallens.errors import EvallensError
from evals.sets.format import CaseSpec, EvalSetSpec
from evals.sets.store import SyncedSet, sync_set
from tests.evallens.cases.conftest import SET_NAME
from tests.evallens.cases.traffic import Traffic

Write = Callable[[Session, Traffic], object]


def promote(trace: str) -> Write:
    def write(session: Session, traffic: Traffic) -> object:
        return cases.promote_traces(
            session, [getattr(traffic, trace)], eval_set_name=SET_NAME, scenario="orders"
        )

    return write


def review_slow(session: Session, traffic: Traffic) -> object:
    key = cases.case_key_for(traffic.slow)
    return cases.review_cases(session, [key], cases.CaseReview(reject=True), eval_set_name=SET_NAME)


def waiting_on_a_lock(sessions: sessionmaker[Session]) -> bool:
    with sessions() as session:
        found = session.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        )
    return bool(found)


def race(sessions: sessionmaker[Session], traffic: Traffic, first: Write, second: Write) -> object:
    """Run ``second`` while ``first``'s transaction has written and not committed; ``second``'s outcome."""
    outcome: list[object] = []

    def run_second() -> None:
        try:
            with sessions.begin() as session:
                outcome.append(second(session, traffic))
        except Exception as error:  # noqa: BLE001 - what the second writer got is what the test asserts
            outcome.append(error)

    with sessions.begin() as session:
        first(session, traffic)
        thread = threading.Thread(target=run_second)
        thread.start()
        deadline = time.monotonic() + 30
        while not waiting_on_a_lock(sessions) and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
    thread.join(30)
    assert not thread.is_alive()
    return outcome[0]


@pytest.mark.parametrize(
    ("first", "second"),
    [(promote("slow"), promote("degraded")), (promote("refusal"), review_slow)],
    ids=["promote-promote", "promote-review"],
)
def test_concurrent_writers_each_store_a_version_on_top_of_the_other(
    sessions: sessionmaker[Session], traffic: Traffic, first: Write, second: Write
) -> None:
    if second is review_slow:
        with sessions.begin() as session:
            promote("slow")(session, traffic)
    with sessions() as session:
        before = cases.latest_eval_set(session, SET_NAME).version
    result = race(sessions, traffic, first, second)
    assert not isinstance(result, Exception), repr(result)
    with sessions() as session:
        latest = cases.latest_eval_set(session, SET_NAME)
        keys = {case.case_key: case.status for case in cases.set_cases(session, latest.id)}
    assert latest.version == before + 2
    if second is review_slow:  # the promotion's case, and the review's decision on top of it
        assert keys[cases.case_key_for(traffic.refusal)] == "needs_review"
        assert keys[cases.case_key_for(traffic.slow)] == "rejected"
    else:
        assert {cases.case_key_for(traffic.slow), cases.case_key_for(traffic.degraded)} <= set(keys)


def test_promoting_one_trace_twice_at_once_stores_it_once(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    result = race(sessions, traffic, promote("slow"), promote("slow"))
    assert isinstance(result, EvallensError) and "already a case of mini-support v2" in str(result)
    with sessions() as session:
        assert cases.latest_eval_set(session, SET_NAME).version == 2


def test_a_sync_beside_a_promotion_stores_its_version_on_top(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    """`eval sets sync` of an edited set file while someone promotes a trace into that set."""
    edited = EvalSetSpec(
        name=SET_NAME,
        source_path="memory",
        cases=[
            CaseSpec(
                id="only-case",
                scenario="orders",
                question="Where is my order?",
                reference_answer="On its way.",
            )
        ],
    )
    with sessions() as session:
        before = cases.latest_eval_set(session, SET_NAME).version
    result = race(sessions, traffic, promote("slow"), lambda session, _: sync_set(session, edited))
    assert isinstance(result, SyncedSet) and result.created, repr(result)
    assert result.version == before + 2  # after the promotion's version, not the same number
