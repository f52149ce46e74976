"""Mistakes in promoting or reviewing cases: each reaches the CLI as one line and exit code 2."""

from collections.abc import Sequence

from evallens.errors import EvallensError
from evallens.telemetry.messages import nul_path


class UnknownEvalSet(EvallensError):
    """The set to promote into or review in does not exist."""


class UnknownTrace(EvallensError):
    """No span of this trace is stored."""


class TraceWithoutQuestion(EvallensError):
    """The trace carries no user question to turn into a case."""


class AlreadyPromoted(EvallensError):
    """The trace is already a case of the set's latest version."""


class UnknownCase(EvallensError):
    """No case with this key in the set's latest version."""


class NotUnderReview(EvallensError):
    """The case is not waiting for review (already active, or rejected)."""


class RejectWithChanges(EvallensError):
    """A review both rejects the cases and gives them content (a reference answer, facts, ...)."""


class IncompleteCase(EvallensError):
    """Reviewing would leave a case that is not valid in a set file (e.g. no reference answer)."""


class UnstorableText(EvallensError):
    """Typed text PostgreSQL cannot hold (NUL: a form pasted it)."""


def refuse_nul(fields: dict[str, str | Sequence[str] | None]) -> None:
    """``UnstorableText`` naming the first field (a text or a list of texts) that holds a NUL."""
    for name, value in fields.items():
        if nul_path(value) is not None:
            raise UnstorableText(f"the {name} holds a NUL character (U+0000), which cannot be stored")


class VersionExists(EvallensError):
    """The new content is identical to a stored version of the set."""
