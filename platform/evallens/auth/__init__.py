"""Project-scoped API keys: create, list, revoke, authenticate; rate limits; the safe-bind check.

Servers build one ``AuthGate(settings, sessions)`` and call ``admit(headers, Scope.INGEST)`` per
request; an ``AuthError`` carries the HTTP status to answer with (401, 403, 429, 503,
or 500 when PostgreSQL refuses the lookup).
"""

from evallens.auth._errors import (
    AuthError,
    AuthFailed,
    AuthUnavailable,
    KeyNotFound,
    KeyRevoked,
    LookupsBusy,
    MissingKey,
    RateLimited,
    ScopeDenied,
    UnsafeBind,
    WrongKey,
)
from evallens.auth.bind import ensure_safe_bind, is_loopback
from evallens.auth.gate import AuthGate
from evallens.auth.headers import metadata_headers, presented_key
from evallens.auth.keys import (
    CreatedKey,
    KeyInfo,
    Principal,
    Scope,
    authenticate,
    create_key,
    ensure_project,
    list_keys,
    revoke_key,
)
from evallens.auth.limit import RateLimiter, retry_after_header
from evallens.auth.lookups import KeyLookups

__all__ = [
    "AuthError",
    "AuthFailed",
    "AuthGate",
    "AuthUnavailable",
    "CreatedKey",
    "KeyInfo",
    "KeyNotFound",
    "KeyLookups",
    "KeyRevoked",
    "LookupsBusy",
    "MissingKey",
    "Principal",
    "RateLimited",
    "RateLimiter",
    "Scope",
    "ScopeDenied",
    "UnsafeBind",
    "WrongKey",
    "authenticate",
    "create_key",
    "ensure_project",
    "ensure_safe_bind",
    "is_loopback",
    "list_keys",
    "metadata_headers",
    "presented_key",
    "retry_after_header",
    "revoke_key",
]
