"""Admission at the edge: a bounded number of requests in flight, a bounded queue, time budgets."""

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from evallens.service.errors import BudgetExceeded, Overloaded

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


@asynccontextmanager
async def in_flight_slot(admission: Admission, deadline: Deadline) -> AsyncIterator[None]:
    """Hold an in-flight slot; waiting for it counts against the time-to-first-token budget."""
    try:
        async with asyncio.timeout(max(deadline.first_token_left_s(), 0.0)):
            await admission.acquire()
    except TimeoutError as error:
        raise deadline.first_token_error() from error
    try:
        yield
    finally:
        admission.release()
