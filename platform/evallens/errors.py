"""Errors that reach a user as one readable line (CLI exit code 2), never as a traceback."""


class EvallensError(Exception):
    """A problem the user can fix: bad input, an unreachable server, a missing file."""


class DatabaseUnavailable(EvallensError):
    """PostgreSQL cannot be reached or refused the connection."""


class BlankText(EvallensError):
    """A text that must say something (a case's question or scenario, a trace id, a tag) was given empty
    or only whitespace."""


# the words for it here and in the set loaders (``evals.sets.format.blank_field``)
BLANK = "cannot be empty or only whitespace"


def refuse_blank(fields: dict[str, str | None]) -> None:
    """``BlankText`` naming the first given field (None: not given) that holds no text."""
    for name, value in fields.items():
        if value is not None and not value.strip():
            raise BlankText(f"the {name} {BLANK}")
