"""Helpers shared by the command modules."""

from typing import NoReturn

from evallens.errors import EvallensError


class NotBuiltYet(EvallensError):
    """A command that exists in the design but has no implementation yet."""


def not_built(command: str) -> NoReturn:
    """Say in one line that ``command`` is not built yet (exit code 2), rather than fake output."""
    raise NotBuiltYet(f"`evallens {command}` is not built yet")
