"""What the collector's and the service's made-up-key tests share: the keys, and how PostgreSQL is
watched for the lookups they cost (the test holds a lock on ``api_keys``, so each lookup waits on it)."""

import time
from collections.abc import Callable
from concurrent.futures import Future

import psycopg


def made_up(index: int) -> str:
    """A key of the right form that no one holds: each one costs a lookup unless refused before it."""
    return f"evk_{index:08x}_made-up"


def lookups_in_postgres(database_url: str) -> int:
    """Key lookups PostgreSQL has been asked for and holds waiting on the test's lock on ``api_keys``."""
    with psycopg.connect(database_url) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_locks WHERE relation = 'api_keys'::regclass AND NOT granted"
        ).fetchone()
    return int(row[0]) if row else 0


def wait_until(condition: Callable[[], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def done(futures: list[Future[int]]) -> list[int]:
    """The answers (status codes) of the requests that have one, sorted."""
    return sorted(future.result() for future in futures if future.done())
