"""Why a request was refused, each with the HTTP status it maps to."""

from evallens.errors import EvallensError


class AuthError(EvallensError):
    """A request that may not go on; ``status`` is the HTTP status to answer with."""

    status = 401


class MissingKey(AuthError):
    """No API key was presented."""


class WrongKey(AuthError):
    """A key was presented but no such key exists (or its secret does not match)."""


class KeyRevoked(AuthError):
    """The key existed but was revoked."""

    status = 403


class ScopeDenied(AuthError):
    """The key is valid but its scope does not cover this use (e.g. a read key sending spans)."""

    status = 403


class RateLimited(AuthError):
    """The key made more requests than its rate limit allows; retry after ``retry_after_s``."""

    status = 429

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class UnsafeBind(EvallensError):
    """A component was asked to listen on a non-loopback address without authentication."""


class KeyNotFound(EvallensError):
    """``keys revoke`` was given a prefix that matches no key."""


class InvalidProjectName(EvallensError):
    """``keys create`` was given a project name no request could carry (empty or blank)."""


class AuthUnavailable(AuthError):
    """PostgreSQL cannot be asked about the key right now; retry after ``retry_after_s``."""

    status = 503

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class AuthFailed(AuthError):
    """PostgreSQL refused the key's lookup (a missing table, a bug): a server error that retrying does not
    mend, logged where it was raised."""

    status = 500


class LookupsBusy(AuthUnavailable):
    """As many keys as a server looks up at once are being looked up; retry after ``retry_after_s``."""
