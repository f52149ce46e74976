"""The errors every command words in one line (exit code 2), and how each is worded."""

from pydantic import ValidationError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from evallens.db.errors import DATABASE_ERRORS, database_unavailable, driver_error, lost_database
from evallens.errors import EvallensError
from evallens.settings import ENV_PREFIX

# What a command may raise for a mistake in its input or surroundings: a setting, the database (away,
# refusing, or no connection of the pool free in time), text that is no Unicode (an argument or variable
# in another encoding), a path (EVALLENS_DATA_DIR a file).
COMMAND_DATABASE_ERRORS = (*DATABASE_ERRORS, PoolTimeout)
WORDED_ERRORS = (EvallensError, ValidationError, UnicodeEncodeError, OSError, *COMMAND_DATABASE_ERRORS)
MAX_SHOWN_CHARS = 60


def one_line(error: Exception) -> str:
    """``error``, one of ``WORDED_ERRORS``, as the one line a user reads."""
    if isinstance(error, EvallensError):
        return str(error)
    if isinstance(error, ValidationError):
        return setting_problem(error)
    if isinstance(error, COMMAND_DATABASE_ERRORS):
        return database_problem(error)
    if isinstance(error, UnicodeEncodeError):
        return f"{shown(error.object)} is not UTF-8 text ({error.reason})"
    if isinstance(error, OSError) and error.filename is not None:
        return f"{error.filename}: {error.strerror or type(error).__name__}"
    return f"{type(error).__name__}: {error}"


def database_problem(error: Exception) -> str:
    """What the database driver said, on one line: the server went away mid-command, did not answer in
    time (a statement or lock timeout, no connection of the pool free: ``database_unavailable``), or
    refused what the command asked (a value over one of PostgreSQL's limits is an OperationalError too)."""
    cause = driver_error(error)
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    said = lines[0] if lines else type(cause).__name__
    sqlstate = getattr(cause, "sqlstate", None)
    if lost_database(error):
        return f"lost the database: {said}"
    if database_unavailable(error):
        where = f" (SQLSTATE {sqlstate})" if sqlstate else ""
        return f"PostgreSQL did not answer in time{where}: {said}; retrying later can succeed"
    return f"the database refused it (SQLSTATE {sqlstate}): {said}"


def setting_problem(error: ValidationError) -> str:
    """A settings class refused the environment: which variable, what is wrong, what it held."""
    problem = error.errors()[0]
    field = ".".join(str(part) for part in problem["loc"])
    name = f"{ENV_PREFIX}{field.upper()}" if error.title.endswith("Settings") else field
    return f"{name}: {problem['msg']} (got {shown(problem.get('input'))})"


def shown(value: object) -> str:
    """``value`` as Python writes it (a surrogate as ``\\udcff``), cut to a readable length."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 3] + "..."
