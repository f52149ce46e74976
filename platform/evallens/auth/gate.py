"""What a server calls on each request: authenticate (with a short cache), check the scope, rate-limit."""

import hashlib
import threading
import time
from collections.abc import Callable, Mapping

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from evallens.auth._errors import AuthUnavailable, RateLimited
from evallens.auth.headers import presented_key
from evallens.auth.keys import Principal, Scope, authenticate
from evallens.auth.limit import RateLimiter, retry_after_header
from evallens.settings import AuthSettings


class AuthGate:
    """One per server process. ``admit`` returns None when auth is off, else the request's principal."""

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
        self._cache: dict[bytes, tuple[Principal, float]] = {}
        self._lock = threading.Lock()

    def admit(self, headers: Mapping[str, str], needed: Scope) -> Principal | None:
        """Authenticate, check ``needed`` and take one token; raises an ``AuthError`` to answer with."""
        if not self.enabled:
            return None
        principal = self.principal(presented_key(headers)).require(needed)
        wait_s = self._limiter.acquire(principal.key_id)
        if wait_s > 0:
            raise RateLimited("this API key is over its rate limit", retry_after_header(wait_s))
        return principal

    def principal(self, presented: str | None) -> Principal:
        """The principal of a presented key, from the cache or PostgreSQL (blocking: call off the loop)."""
        digest = hashlib.sha256((presented or "").encode()).digest()
        now = self._clock()
        with self._lock:
            cached = self._cache.get(digest)
        if cached is not None and cached[1] > now:
            return cached[0]
        try:
            with self._sessions() as session, session.begin():
                principal = authenticate(session, presented)
        except SQLAlchemyError as error:
            raise AuthUnavailable(f"cannot check the API key: {type(error).__name__}") from None
        if self._ttl_s > 0:
            with self._lock:
                if len(self._cache) > 10_000:
                    self._cache.clear()
                self._cache[digest] = (principal, now + self._ttl_s)
        return principal
