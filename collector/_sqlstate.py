"""Tell a PostgreSQL outage (retry later) from rows PostgreSQL refuses (quarantine them), by SQLSTATE.

psycopg maps SQLSTATE classes onto DB-API exceptions that do not follow this line: ``54000`` (an index
row too large) is an ``OperationalError`` like a lost connection, so only the SQLSTATE decides.
"""

import psycopg

# Whole classes that say nothing about the rows: the server is unreachable, shutting down, out of
# resources, busy, or not set up for us (missing table, no privilege) -- retrying later can succeed.
OUTAGE_CLASSES = frozenset(
    {
        "08",  # connection exception
        "28",  # invalid authorization
        "3D",  # invalid catalog (database) name
        "40",  # transaction rollback: serialization failure, deadlock
        "42",  # undefined table/column, insufficient privilege: the schema, not the rows
        "53",  # insufficient resources: disk full, out of memory, too many connections
        "55",  # object not in prerequisite state, lock not available
        "57",  # operator intervention: admin/crash shutdown, cannot connect now, query canceled
        "58",  # system error (I/O)
        "XX",  # internal error
    }
)
OUTAGE_STATES = frozenset({"25006"})  # read-only transaction: a standby, or a read-only failover


def is_outage(error: BaseException) -> bool:
    """True when ``error`` means "PostgreSQL is not available now", False when it means "bad rows".

    Errors raised by psycopg itself (no SQLSTATE) are outages only when they concern the connection;
    anything else that goes wrong while encoding rows is the rows' fault.
    """
    if not isinstance(error, psycopg.Error):
        return False
    state = error.sqlstate
    if state is None:
        return isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)
    return state[:2] in OUTAGE_CLASSES or state in OUTAGE_STATES


def describe(error: BaseException) -> str:
    """One line for logs and the quarantine: ``SQLSTATE 54000: index row size ... exceeds ...``."""
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    state = getattr(error, "sqlstate", None)
    return f"SQLSTATE {state}: {first}" if state else f"{type(error).__name__}: {first}"
