"""An in-process token bucket per API key (or client): ``rate_per_s`` sustained, ``burst`` at once."""

import math
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

MAX_KEYS = 100_000  # buckets kept at once: clients may be many made-up addresses


@dataclass
class _Bucket:
    tokens: float
    updated_s: float


class RateLimiter:
    """Per-key token buckets, safe to share between threads; each process limits on its own."""

    def __init__(
        self,
        rate_per_s: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        if rate_per_s <= 0 or burst < 1:
            raise ValueError("a rate limit needs rate_per_s > 0 and burst >= 1")
        self._rate, self._burst, self._clock = rate_per_s, float(burst), clock
        self._max_keys = max_keys
        self._buckets: dict[Hashable, _Bucket] = {}
        self._lock = threading.Lock()

    @property
    def num_keys(self) -> int:
        """Keys with a bucket now."""
        return len(self._buckets)

    def acquire(self, key_id: Hashable, cost: float = 1.0) -> float:
        """Take ``cost`` tokens from the key's bucket: 0.0 when allowed, else seconds until it would be."""
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(key_id)
            if bucket is None:
                if len(self._buckets) >= self._max_keys:
                    self._forget_full(now)
                bucket = self._buckets[key_id] = _Bucket(self._burst, now)
            bucket.tokens = min(self._burst, bucket.tokens + (now - bucket.updated_s) * self._rate)
            bucket.updated_s = now
            if bucket.tokens >= cost:
                bucket.tokens -= cost
                return 0.0
            return (cost - bucket.tokens) / self._rate

    def _forget_full(self, now: float) -> None:
        """Forget the buckets that have refilled (a new one is the same); when that frees less than a
        quarter, start over: those keys' clients get a full bucket again, memory stays bounded."""
        full = [
            key
            for key, bucket in self._buckets.items()
            if bucket.tokens + (now - bucket.updated_s) * self._rate >= self._burst
        ]
        for key in full:
            del self._buckets[key]
        if len(self._buckets) > self._max_keys * 3 // 4:
            self._buckets.clear()

    def give_back(self, key_id: Hashable, cost: float = 1.0) -> None:
        """Return ``cost`` tokens taken by ``acquire`` for something that turned out not to count."""
        with self._lock:
            bucket = self._buckets.get(key_id)
            if bucket is not None:
                bucket.tokens = min(self._burst, bucket.tokens + cost)


def retry_after_header(wait_s: float) -> int:
    """``Retry-After`` is whole seconds; never 0 for a refused request."""
    return max(1, math.ceil(wait_s))
