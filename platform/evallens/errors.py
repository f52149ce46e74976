"""Errors that reach a user as one readable line (CLI exit code 2), never as a traceback."""


class EvallensError(Exception):
    """A problem the user can fix: bad input, an unreachable server, a missing file."""


class DatabaseUnavailable(EvallensError):
    """PostgreSQL cannot be reached or refused the connection."""
