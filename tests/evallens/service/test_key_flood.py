"""A flood of made-up API keys against the reference service (real vLLM tiny model, real PostgreSQL, uvicorn
on a real socket): one address's unknown keys are refused before PostgreSQL is asked, lookups at once are
bounded, key holders still get in, and a key PostgreSQL cannot check is a 503 with Retry-After.

Every request's key used to be looked up in a thread (``asyncio.to_thread(gate.admit, ...)``): a client
sending distinct made-up keys held the threads that also embed questions and retrieve, and the
connections retrieval needs, and a key holder seen for the first time waited behind all of them."""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from evallens.auth import Scope, create_key
from evallens.db.engine import sqlalchemy_url
from evallens.db.errors import POSTGRES_AWAY_RETRY_AFTER_S
from evallens.service.app import MAX_KEY_LOOKUPS_AT_ONCE
from tests.key_flood import done, lookups_in_postgres, made_up, wait_until

pytestmark = pytest.mark.slow

FEEDBACK = {"trace_id": "0" * 32, "score": 1}
AUTH = {"auth_enabled": True, "retrieval_enabled": False}


def new_key(database_url: str, project: str) -> str:
    engine = create_engine(sqlalchemy_url(database_url))
    with Session(engine) as session, session.begin():
        key = create_key(session, project, Scope.INGEST).key
    engine.dispose()
    return key


def give_feedback(url: str, key: str, source: str = "127.0.0.1", **headers: str) -> httpx.Response:
    """Send feedback with ``key`` from the client address ``source`` (any of 127.0.0.0/8)."""
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(base_url=url, transport=transport, timeout=120) as client:
        return client.post("/v1/feedback", json=FEEDBACK, headers={"x-evallens-key": key, **headers})


def assert_refused(response: httpx.Response, status: int, error_type: str, words: str) -> None:
    """An OpenAI-style error with ``Retry-After``, as the service's other refusals."""
    assert response.status_code == status, response.text
    assert int(response.headers["retry-after"]) >= 1
    error = response.json()["error"]
    assert error["type"] == error_type and error["code"] == f"auth_{status}", error
    assert words in error["message"], error


def test_an_address_sending_made_up_keys_is_refused_before_postgres_is_asked(
    serve: Any, database_url: str
) -> None:
    key = new_key(database_url, "shop-a")
    with serve(database_url=database_url, service_key_attempts_per_minute=2, **AUTH) as client:
        url = str(client.base_url)
        with psycopg.connect(database_url) as lock_holder, ThreadPoolExecutor(8) as clients:
            # lookups that reach PostgreSQL wait here, where the test can count them
            lock_holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
            answers = [
                clients.submit(lambda i: give_feedback(url, made_up(i)).status_code, i) for i in range(8)
            ]
            wait_until(lambda: len(done(answers)) == 6)
            assert done(answers) == [429] * 6
            wait_until(lambda: lookups_in_postgres(database_url) == 2)
            later = give_feedback(url, made_up(100))
            assert_refused(later, 429, "rate_limit_error", "too many refused API keys from 127.0.0.1")
            assert lookups_in_postgres(database_url) == 2  # the two let through, not one more
            lock_holder.rollback()
        assert sorted(answer.result() for answer in answers) == [401] * 2 + [429] * 6
        assert give_feedback(url, made_up(101)).status_code == 429  # still refused, without a lookup
        # another client, with a key the service sees for the first time
        answered = give_feedback(url, key, source="127.0.0.2")
        assert answered.status_code == 202, answered.text


def test_lookups_at_once_are_bounded_across_addresses(serve: Any, database_url: str) -> None:
    """Made-up keys from many addresses (each within its attempts) take a few lookup slots, not every
    thread and connection: the rest are a 503 with Retry-After, and a known key still gets in."""
    key = new_key(database_url, "shop-a")
    with serve(database_url=database_url, auth_cache_ttl_s=3600, **AUTH) as client:
        url = str(client.base_url)
        assert give_feedback(url, key).status_code == 202  # the service knows this key now
        num_clients = MAX_KEY_LOOKUPS_AT_ONCE + 6
        with psycopg.connect(database_url) as lock_holder, ThreadPoolExecutor(num_clients) as clients:
            lock_holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
            answers = [
                clients.submit(
                    lambda i: give_feedback(url, made_up(i), source=f"127.0.1.{i + 1}").status_code, i
                )
                for i in range(num_clients)
            ]
            wait_until(lambda: len(done(answers)) == 6)
            assert done(answers) == [503] * 6
            # the refused answers can come back before the admitted lookups reach PostgreSQL
            wait_until(lambda: lookups_in_postgres(database_url) == MAX_KEY_LOOKUPS_AT_ONCE)
            busy = give_feedback(url, made_up(100), source="127.0.2.1")
            assert_refused(busy, 503, "server_error", "unknown API keys already")
            assert give_feedback(url, key, source="127.0.2.2").status_code == 202
            lock_holder.rollback()
        assert sorted(answer.result() for answer in answers) == [401] * MAX_KEY_LOOKUPS_AT_ONCE + [503] * 6


def test_a_key_postgres_cannot_check_is_a_503_with_retry_after(serve: Any) -> None:
    """With PostgreSQL away the answer was a bare 503, unlike the service's other 503/429 refusals: an
    OpenAI client told nothing when to come back retried at its own pace."""
    unreachable = "postgresql://nobody@127.0.0.1:1/none"
    with serve(database_url=unreachable, database_connect_timeout_s=2, **AUTH) as client:
        refused = give_feedback(str(client.base_url), made_up(0))
    assert_refused(refused, 503, "server_error", "cannot check the API key")
    assert refused.headers["retry-after"] == str(POSTGRES_AWAY_RETRY_AFTER_S)


def test_a_client_cannot_name_its_own_address(serve: Any, database_url: str) -> None:
    """uvicorn took the address a peer in FORWARDED_ALLOW_IPS (127.0.0.1 and ::1 unless set) named in
    ``X-Forwarded-For``: a client on loopback, or reaching the service through an SSH tunnel or a port
    forward, had a new budget of refused keys for every address it named."""
    with serve(database_url=database_url, service_key_attempts_per_minute=1, **AUTH) as client:
        url = str(client.base_url)
        assert give_feedback(url, made_up(0)).status_code == 401
        named = give_feedback(url, made_up(1), **{"X-Forwarded-For": "203.0.113.7"})
        assert_refused(named, 429, "rate_limit_error", "too many refused API keys from 127.0.0.1")
