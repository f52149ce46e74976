"""What a server calls on each request: authenticate (with a short cache), check the scope, rate-limit."""

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from evallens.auth._errors import AuthError, AuthFailed, AuthUnavailable, RateLimited
from evallens.auth.headers import presented_key
from evallens.auth.keys import Principal, Scope, authenticate
from evallens.auth.limit import RateLimiter, retry_after_header
from evallens.db.errors import POSTGRES_AWAY_RETRY_AFTER_S, database_unavailable
from evallens.settings import AuthSettings

logger = logging.getLogger(__name__)
Cached = TypeVar("Cached")
MAX_CACHED_KEYS = 10_000  # of each kind, accepted and refused; past it the cache starts over


class AuthGate:
    """One per server process. ``admit`` returns None when auth is off, else the request's principal.

    Answers are cached for ``auth_cache_ttl_s``: an accepted key's principal, and a refusal (missing,
    wrong or revoked key), so a client sending a wrong key costs PostgreSQL one check per TTL, not one
    per request. Refusals are kept apart, so keys sprayed at the gate never push out accepted ones.
    PostgreSQL away or too slow, or no pooled connection free in time (``AuthUnavailable``, retry after
    ``POSTGRES_AWAY_RETRY_AFTER_S``) is never cached, nor PostgreSQL refusing the lookup (``AuthFailed``,
    a 500: a missing table is not mended by retrying).
    """

    def __init__(
        self,
        settings: AuthSettings,
        sessions: Callable[[], Session],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.enabled = settings.auth_enabled
        self._sessions, self._clock = sessions, clock
        self._ttl_s = settings.auth_cache_ttl_s
        self._limiter = RateLimiter(settings.auth_rate_limit_per_s, settings.auth_rate_limit_burst, clock)
        self._accepted: dict[bytes, tuple[Principal, float]] = {}
        self._refused: dict[bytes, tuple[tuple[type[AuthError], str], float]] = {}
        self._lock = threading.Lock()

    def admit(self, headers: Mapping[str, str], needed: Scope) -> Principal | None:
        """Authenticate, check ``needed`` and take one token; raises an ``AuthError`` to answer with."""
        if not self.enabled:
            return None
        return self._take_token(self.principal(presented_key(headers)).require(needed))

    def admit_cached(self, headers: Mapping[str, str], needed: Scope) -> Principal | None:
        """``admit`` for a key the cache knows, without blocking (call it on the event loop, and ``admit``
        off the loop when it returns None: auth off or a key the cache does not know)."""
        if not self.enabled:
            return None
        principal = self._cached(hashlib.sha256((presented_key(headers) or "").encode()).digest())
        return self._take_token(principal.require(needed)) if principal is not None else None

    def principal(self, presented: str | None) -> Principal:
        """The principal of a presented key, from the cache or PostgreSQL (blocking: call off the loop)."""
        digest = hashlib.sha256((presented or "").encode()).digest()
        now = self._clock()
        cached = self._cached(digest)
        if cached is not None:
            return cached
        try:
            with self._sessions() as session, session.begin():
                principal = authenticate(session, presented)
        except SQLAlchemyError as error:
            # away, too slow to answer, or every pooled connection busy (other requests' slow queries):
            # a retry can succeed
            if database_unavailable(error):
                raise AuthUnavailable(
                    f"cannot check the API key: {type(error).__name__}", POSTGRES_AWAY_RETRY_AFTER_S
                ) from None
            # logged here, the one place every server's request passes: the collector answers it as an
            # error code, without a traceback anywhere
            logger.exception("PostgreSQL refused an API key's lookup")
            raise AuthFailed(
                f"cannot check the API key: PostgreSQL refused the lookup ({type(error).__name__}); "
                "the server logged why"
            ) from error
        except AuthError as error:
            self._remember(self._refused, digest, (type(error), str(error)), now)
            raise
        self._remember(self._accepted, digest, principal, now)
        return principal

    def _cached(self, digest: bytes) -> Principal | None:
        """The cached principal of a key's digest, None when unknown; raises its cached refusal."""
        now = self._clock()
        with self._lock:
            accepted, refused = self._accepted.get(digest), self._refused.get(digest)
        if accepted is not None and accepted[1] > now:
            return accepted[0]
        if refused is not None and refused[1] > now:
            kind, message = refused[0]
            raise kind(message)  # a new one each time: threads raising one object would share its traceback
        return None

    def _take_token(self, principal: Principal) -> Principal:
        wait_s = self._limiter.acquire(principal.key_id)
        if wait_s > 0:
            raise RateLimited("this API key is over its rate limit", retry_after_header(wait_s))
        return principal

    def _remember(
        self, cache: dict[bytes, tuple[Cached, float]], digest: bytes, answer: Cached, now: float
    ) -> None:
        if self._ttl_s <= 0:
            return
        with self._lock:
            if len(cache) >= MAX_CACHED_KEYS:
                cache.clear()
            cache[digest] = (answer, now + self._ttl_s)
