"""What a key PostgreSQL has to check may cost: refused keys per client address, lookups at once."""

import asyncio
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from evallens.auth._errors import AuthError, LookupsBusy, RateLimited
from evallens.auth.gate import AuthGate
from evallens.auth.keys import Principal, Scope
from evallens.auth.limit import MAX_KEYS, RateLimiter, retry_after_header

REFUSED = (401, 403)  # a wrong, missing or revoked key, or one without the scope
ATTEMPTS_WINDOW_S = 60.0


class KeyLookups:
    """Guards the lookups of keys a gate's cache does not know, before any is started.

    Each lookup takes one of its client address's ``attempts_per_minute`` (given back unless the key
    is refused: an accepted key, or PostgreSQL away, costs the address nothing) and one of
    ``max_at_once`` slots. An address out of attempts is refused with ``RateLimited`` (429), every slot
    being taken with ``LookupsBusy`` (503), so a client spraying made-up keys costs PostgreSQL a few
    queries a minute and never holds every thread that looks keys up. Safe to share between threads.
    """

    def __init__(
        self,
        attempts_per_minute: int,
        max_at_once: int,
        retry_after_s: int,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = MAX_KEYS,
    ) -> None:
        self._attempts = RateLimiter(
            attempts_per_minute / ATTEMPTS_WINDOW_S, attempts_per_minute, clock, max_clients
        )
        self._max_at_once, self._retry_after_s = max_at_once, retry_after_s
        self._num_running = 0
        self._lock = threading.Lock()

    @property
    def num_clients(self) -> int:
        """Client addresses whose attempts are counted now (at most ``max_clients``)."""
        return self._attempts.num_keys

    async def admit(
        self, gate: AuthGate, headers: Mapping[str, str], needed: Scope, client: str
    ) -> Principal | None:
        """``gate.admit`` on an event loop: a key the gate's cache knows is answered at once, any other
        waits for a thread (and PostgreSQL) only within ``lookup(client)``; raises an ``AuthError``."""
        principal = gate.admit_cached(headers, needed)
        if principal is None and gate.enabled:
            with self.lookup(client):
                principal = await asyncio.to_thread(gate.admit, headers, needed)
        return principal

    @contextmanager
    def lookup(self, client: str) -> Iterator[None]:
        """Hold an attempt of ``client`` and a slot while the block looks a key up; the block's
        ``AuthError`` (401/403) is what keeps the attempt spent."""
        wait_s = self._attempts.acquire(client)
        if wait_s > 0:
            retry_after_s = retry_after_header(wait_s)
            raise RateLimited(
                f"too many refused API keys from {client}: try again in {retry_after_s} s", retry_after_s
            )
        with self._lock:
            busy = self._num_running >= self._max_at_once
            if not busy:
                self._num_running += 1
        if busy:
            self._attempts.give_back(client)
            raise LookupsBusy(
                f"the server is checking {self._max_at_once} unknown API keys already", self._retry_after_s
            )
        refused = False
        try:
            yield
        except AuthError as error:
            refused = error.status in REFUSED
            raise
        finally:
            with self._lock:
                self._num_running -= 1
            if not refused:
                self._attempts.give_back(client)
