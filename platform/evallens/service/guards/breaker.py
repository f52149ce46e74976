"""A circuit breaker over a sliding window of call outcomes: closed -> open -> half-open -> closed.

Closed: calls pass; once the window (``breaker_window_s``) holds ``breaker_min_calls`` calls and the
error rate reaches ``breaker_error_rate``, it opens. Open: calls are refused for ``breaker_open_s``.
Half-open: a limited number of probe calls pass; ``breaker_half_open_probes`` successes close it, one
failure opens it again. The state is exported as ``evallens_breaker_state{breaker=name}``.
"""

import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import TypeVar

from evallens.service.guards._metrics import GuardMetrics
from evallens.settings import GuardSettings

T = TypeVar("T")


class BreakerState(StrEnum):
    """States of a circuit breaker."""

    CLOSED = "closed"
    HALF_OPEN = "half_open"
    OPEN = "open"


STATE_VALUES = {BreakerState.CLOSED: 0, BreakerState.HALF_OPEN: 1, BreakerState.OPEN: 2}


class BreakerOpen(Exception):
    """The breaker refused the call."""

    def __init__(self, name: str) -> None:
        super().__init__(f"circuit breaker {name!r} is open")
        self.name = name


class CircuitBreaker:
    """Guards one dependency (``retrieval``, ``engine``); thread-safe; the clock is injectable."""

    def __init__(
        self,
        name: str,
        settings: GuardSettings,
        *,
        metrics: GuardMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self._settings = settings
        self._metrics = metrics or GuardMetrics.create()
        self._clock = clock
        self._lock = threading.Lock()
        self._outcomes: deque[tuple[float, bool]] = deque()
        self._state = BreakerState.CLOSED
        self._opened_at = 0.0
        self._probes_in_flight = 0
        self._probe_successes = 0
        self._export()

    @property
    def state(self) -> BreakerState:
        """The current state (an open breaker turns half-open once its cool-down has passed)."""
        with self._lock:
            self._advance(self._clock())
            return self._state

    def error_rate(self) -> float:
        """Failed share of the calls in the window (0 when there were none)."""
        with self._lock:
            self._trim(self._clock())
            if not self._outcomes:
                return 0.0
            return sum(1 for _, ok in self._outcomes if not ok) / len(self._outcomes)

    def allow(self) -> bool:
        """Whether a call may go ahead now; in half-open state this takes a probe slot."""
        with self._lock:
            self._advance(self._clock())
            if self._state is BreakerState.CLOSED:
                return True
            if self._state is BreakerState.HALF_OPEN and self._probes_in_flight < self._probe_limit():
                self._probes_in_flight += 1
                return True
            return False

    def record_success(self) -> None:
        """Report that an allowed call succeeded."""
        self._record(ok=True)

    def record_failure(self) -> None:
        """Report that an allowed call failed (an error or a missed time budget)."""
        self._record(ok=False)

    def release(self) -> None:
        """Give back a half-open probe slot for a call that ended without an outcome (cancelled)."""
        with self._lock:
            self._probes_in_flight = max(0, self._probes_in_flight - 1)

    async def call(self, function: Callable[[], Awaitable[T]]) -> T:
        """Run ``function`` through the breaker: raises ``BreakerOpen`` when refused."""
        if not self.allow():
            raise BreakerOpen(self.name)
        try:
            result = await function()
        except Exception:
            self.record_failure()
            raise
        except BaseException:
            self.release()
            raise
        self.record_success()
        return result

    def _probe_limit(self) -> int:
        return self._settings.breaker_half_open_probes

    def _record(self, *, ok: bool) -> None:
        with self._lock:
            now = self._clock()
            self._advance(now)
            if self._state is BreakerState.HALF_OPEN:
                self._probes_in_flight = max(0, self._probes_in_flight - 1)
                if not ok:
                    self._open(now)
                    return
                self._probe_successes += 1
                if self._probe_successes >= self._probe_limit():
                    self._state = BreakerState.CLOSED
                    self._outcomes.clear()
                    self._export()
                return
            if self._state is BreakerState.OPEN:
                return  # a call that started before the breaker opened; the window restarts on close
            self._outcomes.append((now, ok))
            self._trim(now)
            failures = sum(1 for _, good in self._outcomes if not good)
            if (
                len(self._outcomes) >= self._settings.breaker_min_calls
                and failures / len(self._outcomes) >= self._settings.breaker_error_rate
            ):
                self._open(now)

    def _open(self, now: float) -> None:
        self._state = BreakerState.OPEN
        self._opened_at = now
        self._probes_in_flight = 0
        self._probe_successes = 0
        self._export()

    def _advance(self, now: float) -> None:
        if self._state is BreakerState.OPEN and now - self._opened_at >= self._settings.breaker_open_s:
            self._state = BreakerState.HALF_OPEN
            self._probes_in_flight = 0
            self._probe_successes = 0
            self._export()

    def _trim(self, now: float) -> None:
        while self._outcomes and now - self._outcomes[0][0] > self._settings.breaker_window_s:
            self._outcomes.popleft()

    def _export(self) -> None:
        self._metrics.breaker_state.labels(breaker=self.name).set(STATE_VALUES[self._state])
