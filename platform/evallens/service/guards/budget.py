"""Per-stage time budgets: a stage that overruns raises ``BudgetExceeded`` (and is cancelled)."""

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

T = TypeVar("T")


class BudgetExceeded(Exception):
    """A stage did not finish within its time budget."""

    def __init__(self, stage: str, budget_ms: float) -> None:
        super().__init__(f"{stage} exceeded its {budget_ms:g} ms budget")
        self.stage = stage
        self.budget_ms = budget_ms


async def within_budget(awaitable: Awaitable[T], *, stage: str, budget_ms: float) -> T:
    """Await ``awaitable`` for at most ``budget_ms``.

    Work already handed to a thread (``asyncio.to_thread``) cannot be interrupted: it finishes in
    the background and its result is dropped.
    """
    try:
        return await asyncio.wait_for(awaitable, timeout=budget_ms / 1000.0)
    except TimeoutError:
        raise BudgetExceeded(stage, budget_ms) from None


async def first_item_within(items: AsyncIterator[T], *, stage: str, budget_ms: float) -> AsyncIterator[T]:
    """Re-yield ``items``, raising ``BudgetExceeded`` if the first one (e.g. the first token) is late."""
    try:
        first = await within_budget(anext(items), stage=stage, budget_ms=budget_ms)
    except StopAsyncIteration:
        return
    yield first
    async for item in items:
        yield item
