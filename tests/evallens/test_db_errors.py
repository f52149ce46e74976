"""Which database errors mean "PostgreSQL is away" (a server answers 503, a command says it lost the
database) and which mean PostgreSQL refused what was asked."""

import psycopg
import pytest
from psycopg import errors
from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from evallens.db.errors import database_unavailable, lost_database

LOST = [
    psycopg.OperationalError("connection to server at 127.0.0.1, port 1 failed"),  # no SQLSTATE
    psycopg.InterfaceError("the connection is closed"),
    errors.AdminShutdown("terminating connection due to administrator command"),  # 57P01
    errors.CannotConnectNow("the database system is starting up"),  # 57P03
    errors.ConnectionFailure("server closed the connection unexpectedly"),  # 08006
    OperationalError("SELECT 1", {}, errors.AdminShutdown("terminating connection")),  # wrapped
]
REFUSED = [
    errors.ProgramLimitExceeded("index row size 8016 exceeds btree version 4 maximum 2704"),  # 54000
    errors.QueryCanceled("canceling statement due to statement timeout"),  # 57014: not 57P
    errors.UndefinedTable('relation "documents" does not exist'),
    ProgrammingError("SELECT 1", {}, errors.UndefinedTable('relation "documents" does not exist')),
    OperationalError("SELECT 1", {}, errors.ProgramLimitExceeded("index row size 8016 exceeds")),
    ConnectionError("not a database error"),
]


@pytest.mark.parametrize("error", LOST, ids=lambda error: type(error).__name__)
def test_the_server_gone_is_lost(error: Exception) -> None:
    assert lost_database(error)


@pytest.mark.parametrize("error", REFUSED, ids=lambda error: type(error).__name__)
def test_a_refused_command_is_not_lost(error: Exception) -> None:
    assert not lost_database(error)


TIMED_OUT = [
    errors.QueryCanceled("canceling statement due to statement timeout"),  # 57014
    errors.LockNotAvailable("canceling statement due to lock timeout"),  # 55P03
    OperationalError("SELECT 1", {}, errors.QueryCanceled("canceling statement due to statement timeout")),
    # no connection of the pool's came free in time: each held by a statement PostgreSQL is slow to answer
    PoolTimeout("QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00"),
]


@pytest.mark.parametrize("error", LOST + TIMED_OUT, ids=lambda error: type(error).__name__)
def test_away_or_too_slow_is_unavailable(error: Exception) -> None:
    """The key check answers both with a 503 and Retry-After: a locked table or an overloaded server is
    over in a while, as a restart is."""
    assert database_unavailable(error)


@pytest.mark.parametrize("error", [e for e in REFUSED if not isinstance(e, errors.QueryCanceled)])
def test_a_refused_command_is_not_unavailable(error: Exception) -> None:
    assert not database_unavailable(error)
