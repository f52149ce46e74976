"""Admission and time budgets, the one mechanism for both: a bounded number of requests in flight, a
bounded queue, a request's time-to-first-token and total budgets, and a stage's own budget (retrieval).
Whatever misses its budget raises ``BudgetExceeded`` (a 504 when it reaches the client)."""

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from evallens.service.errors import BudgetExceeded, Overloaded

T = TypeVar("T")

TTFT_BUDGET = "time_to_first_token"
TOTAL_BUDGET = "total"


class Admission:
    """At most ``max_in_flight`` requests reach the engine; ``max_queued`` wait; the rest get 429."""

    def __init__(self, max_in_flight: int, max_queued: int, retry_after_s: int) -> None:
        self.max_in_flight = max_in_flight
        self.max_queued = max_queued
        self.retry_after_s = retry_after_s
        self.num_in_flight = 0
        self.num_queued = 0
        self._slots = asyncio.Semaphore(max_in_flight)

    def check(self) -> None:
        """Refuse now, before any work, when a new request could neither run nor wait."""
        if self.num_in_flight >= self.max_in_flight and self.num_queued >= self.max_queued:
            raise Overloaded(self.retry_after_s, self.num_in_flight, self.num_queued)

    async def acquire(self) -> None:
        """Wait for an in-flight slot (the caller bounds the wait with its deadline)."""
        self.check()
        self.num_queued += 1
        try:
            await self._slots.acquire()
        finally:
            self.num_queued -= 1
        self.num_in_flight += 1

    def release(self) -> None:
        """Give the slot back."""
        self.num_in_flight -= 1
        self._slots.release()


@dataclass
class Deadline:
    """The two budgets of one request, measured from its arrival."""

    ttft_budget_s: float
    total_budget_s: float
    started: float = field(default_factory=time.perf_counter)

    def elapsed_s(self) -> float:
        """Seconds since the request arrived."""
        return time.perf_counter() - self.started

    def first_token_left_s(self) -> float:
        """Seconds left until the first token must be there (bounded by the total budget)."""
        return min(self.ttft_budget_s, self.total_budget_s) - self.elapsed_s()

    def total_left_s(self) -> float:
        """Seconds left for the whole request."""
        return self.total_budget_s - self.elapsed_s()

    def first_token_error(self) -> BudgetExceeded:
        """The 504 for a missed first token (or a total budget shorter than the TTFT one)."""
        if self.total_budget_s <= self.ttft_budget_s:
            return BudgetExceeded(TOTAL_BUDGET, self.total_budget_s)
        return BudgetExceeded(TTFT_BUDGET, self.ttft_budget_s)

    def total_error(self) -> BudgetExceeded:
        """The 504 for a missed total budget."""
        return BudgetExceeded(TOTAL_BUDGET, self.total_budget_s)


async def within(awaitable: Awaitable[T], seconds: float, missed: BudgetExceeded) -> T:
    """Await ``awaitable`` for at most ``seconds`` (cancelled after), raising ``missed`` when it is late.

    Work already handed to a thread (``asyncio.to_thread``) cannot be interrupted: it finishes in the
    background and its result is dropped.
    """
    scope = asyncio.timeout(max(seconds, 0.0))
    try:
        async with scope:
            return await awaitable
    except TimeoutError as error:
        if scope.expired():  # the budget ran out, not a timeout of the awaited work's own
            raise missed from error
        raise


@asynccontextmanager
async def in_flight_slot(admission: Admission, deadline: Deadline) -> AsyncIterator[None]:
    """Hold an in-flight slot; waiting for it counts against the time-to-first-token budget."""
    await within(admission.acquire(), deadline.first_token_left_s(), deadline.first_token_error())
    try:
        yield
    finally:
        admission.release()
