"""Which PostgreSQL failures mean "retry later" and which mean "these rows are bad" (issue 14)."""

import psycopg
import pytest
from psycopg import errors

from collector._sqlstate import describe, is_outage

OUTAGES = [
    psycopg.OperationalError("connection to server failed"),  # no SQLSTATE: the client lost the server
    psycopg.InterfaceError("the connection is closed"),
    errors.AdminShutdown("terminating connection due to administrator command"),
    errors.CannotConnectNow("the database system is starting up"),
    errors.TooManyConnections("too many clients"),
    errors.ReadOnlySqlTransaction("cannot execute COPY in a read-only transaction"),
    errors.DiskFull("could not extend file"),
    errors.UndefinedTable('relation "spans" does not exist'),
    errors.SerializationFailure("could not serialize access"),
    errors.ConnectionFailure("server closed the connection unexpectedly"),
]
DATA_ERRORS = [
    errors.ProgramLimitExceeded("index row size 8016 exceeds btree version 4 maximum 2704"),
    errors.NumericValueOutOfRange("value out of range"),
    errors.CheckViolation("new row violates check constraint"),
    errors.InvalidTextRepresentation("invalid input syntax"),
    errors.UntranslatableCharacter("unsupported Unicode escape sequence"),
    psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"),  # raised by psycopg
    OverflowError("date value out of range"),  # raised while encoding a row
]


@pytest.mark.parametrize("error", OUTAGES, ids=lambda error: type(error).__name__)
def test_outages_are_retried_later(error: Exception) -> None:
    assert is_outage(error)


@pytest.mark.parametrize("error", DATA_ERRORS, ids=lambda error: type(error).__name__)
def test_data_errors_are_the_rows_fault(error: Exception) -> None:
    assert not is_outage(error)


def test_the_reason_names_the_sqlstate() -> None:
    error = errors.ProgramLimitExceeded("index row size 8016 exceeds maximum\nDETAIL: more")
    assert describe(error) == "SQLSTATE 54000: index row size 8016 exceeds maximum"
    assert describe(OverflowError("date value out of range")) == "OverflowError: date value out of range"
