"""What every data module shares: the database, its engine and sessions, the caches and the login check.

The first argument of every query is the database URL, so that caches of different databases never
mix; every query of spans, runs, sets and gates also takes the project the login may see.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar, cast

import pandas as pd
import streamlit as st
from sqlalchemy import Engine, event, text
from sqlalchemy.orm import Session

from evallens.auth import AuthGate, Principal, RateLimiter, Scope
from evallens.db import create_db_engine, create_session_factory, open_database
from evallens.runs import fail_abandoned_runs
from evallens.settings import AuthSettings, DashboardSettings, DatabaseSettings

CACHE_TTL_S = 30
SIGN_IN_REFILL_S = 60  # past the burst, one more sign-in a minute per client address
P = ParamSpec("P")
R = TypeVar("R")


def cached(func: Callable[P, R]) -> Callable[P, R]:
    """Cache a query's result for ``CACHE_TTL_S`` seconds (arguments named ``_x`` are not hashed)."""
    return cast(Callable[P, R], st.cache_data(ttl=CACHE_TTL_S, show_spinner=False)(func))


def resource(**options: Any) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Keep one result per process and arguments (``st.cache_resource``): engines, gates, threads."""

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        return cast(Callable[P, R], st.cache_resource(show_spinner=False, **options)(func))

    return decorate


@resource()
def database_url() -> str:
    """The configured database, or the embedded default (started or joined once per process)."""
    return open_database(DatabaseSettings()).url


@resource(on_release=lambda engine: engine.dispose())
def _engine(url: str) -> Engine:
    timeout_s = DashboardSettings().dashboard_statement_timeout_s
    # a page waits no longer for a free connection (other pages' slow queries hold them) than for a query
    engine = create_db_engine(url, pool_size=3, pool_timeout_s=timeout_s)
    timeout_ms = round(timeout_s * 1000)

    # a page waits for its queries: a locked table or an overloaded server must end in a message
    @event.listens_for(engine, "connect")
    def limit_statements(connection: Any, _record: Any) -> None:
        autocommit, connection.autocommit = connection.autocommit, True
        with connection.cursor() as cursor:
            cursor.execute(f"SET statement_timeout = {timeout_ms}")
        connection.autocommit = autocommit

    return engine


@contextmanager
def reading(url: str) -> Iterator[Session]:
    """A session for the core's read functions (run resolution, mining); one transaction that commits
    what they store for next time (mining's question embeddings) and clears no cached query."""
    with Session(_engine(url)) as session, session.begin():
        yield session


@contextmanager
def writing(url: str) -> Iterator[Session]:
    """One transaction for a core write function (what the CLI calls too); commits, then forgets every
    cached query so the page shows the change."""
    with Session(_engine(url)) as session, session.begin():
        yield session
    st.cache_data.clear()


@resource()
def _gate(url: str) -> AuthGate:
    return AuthGate(AuthSettings(), create_session_factory(_engine(url)))


@resource()
def sign_in_limiter(attempts: int) -> RateLimiter:
    """Sign-in attempts per client address, shared by every session of the process: ``attempts`` at
    once, then one per ``SIGN_IN_REFILL_S``."""
    return RateLimiter(1 / SIGN_IN_REFILL_S, attempts)


def reader(url: str, key: str) -> Principal:
    """The principal of a key that may read (cached briefly); raises an ``AuthError`` otherwise."""
    return _gate(url).principal(key).require(Scope.READ)


def fail_abandoned(url: str, project: str) -> None:
    """Mark the runs of ``project`` whose process is gone as failed (``evallens.runs.fail_abandoned_runs``)
    before a query shows run statuses: a page never shows a dead run as running."""
    fail_abandoned_runs(_engine(url), project=project)


def frame(url: str, sql: str, **params: Any) -> pd.DataFrame:
    """The rows of one SQL query as a data frame."""
    with _engine(url).connect() as connection:
        result = connection.execute(text(sql), params)
        return pd.DataFrame(result.fetchall(), columns=list(result.keys()))
