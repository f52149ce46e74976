"""Tell PostgreSQL being away (unreachable, or it dropped the connection) from PostgreSQL refusing what was
asked, by the error's class and SQLSTATE: psycopg raises a value over one of PostgreSQL's limits as the same
``OperationalError`` as a lost connection, so only the SQLSTATE decides."""

import psycopg
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

__all__ = [
    "DATABASE_ERRORS",
    "POSTGRES_AWAY_RETRY_AFTER_S",
    "database_unavailable",
    "driver_error",
    "lost_database",
]

# what the driver raises, bare or wrapped by SQLAlchemy, when the server is away or refused a command
DATABASE_ERRORS = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)
# what a server answering "PostgreSQL is away" tells its clients to wait: a few seconds spaces the retries
# of every client out over a PostgreSQL restart without keeping them away long once it is back
POSTGRES_AWAY_RETRY_AFTER_S = 5
# 08: connection exception; 57P: the server is shutting down, crashed or cannot take connections yet
LOST_SQLSTATE_CLASSES = ("08", "57P")
# 57014: query_canceled (a statement timeout, or a cancel); 55P03: lock_not_available (a lock timeout)
TIMED_OUT_SQLSTATES = ("57014", "55P03")


def driver_error(error: BaseException) -> BaseException:
    """The driver's error behind SQLAlchemy's wrapper, or ``error`` itself."""
    return getattr(error, "orig", None) or error


def lost_database(error: BaseException) -> bool:
    """True when ``error`` says PostgreSQL cannot be reached or dropped the connection (retrying later can
    succeed), False for anything else, PostgreSQL refusing the command included."""
    if not isinstance(error, DATABASE_ERRORS):
        return False
    sqlstate: str | None = getattr(driver_error(error), "sqlstate", None)
    # no SQLSTATE: the client failed to connect or lost the server; the server said none
    return sqlstate is None or sqlstate.startswith(LOST_SQLSTATE_CLASSES)


def database_unavailable(error: BaseException) -> bool:
    """True when PostgreSQL is away (``lost_database``) or did not answer in time (a statement or lock
    timeout: a table locked, a server overloaded; or no connection of the engine's pool came free within
    its pool timeout, every one held by statements that slow); retrying later can succeed either way."""
    if lost_database(error) or isinstance(error, PoolTimeout):
        return True
    if not isinstance(error, DATABASE_ERRORS):
        return False
    return getattr(driver_error(error), "sqlstate", None) in TIMED_OUT_SQLSTATES
