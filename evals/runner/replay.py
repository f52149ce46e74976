"""Send every case (times ``repeats``) to the target with bounded concurrency and a progress bar."""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from evals.runner.client import ChatRequest, Completion, complete
from evals.sets.format import CaseSpec
from evals.target import api_url


@dataclass(frozen=True)
class ReplayOptions:
    """How to talk to the target."""

    endpoint: str
    model: str
    run_id: str
    concurrency: int = 4
    repeats: int = 1
    timeout_s: float = 120.0
    temperature: float = 0.0
    max_tokens: int = 256
    api_key: str | None = None
    no_cache: bool = False


@dataclass(frozen=True)
class ReplayedCase:
    """One case, one repeat, and what the target returned."""

    case: CaseSpec
    repeat: int
    completion: Completion


def replay(
    cases: list[CaseSpec],
    options: ReplayOptions,
    on_done: Callable[["ReplayedCase"], None] | None = None,
) -> list[ReplayedCase]:
    """Replay ``cases`` ``options.repeats`` times; ``on_done`` hears of each request once it is answered."""
    return asyncio.run(_replay(cases, options, on_done or (lambda _: None)))


async def _replay(
    cases: list[CaseSpec], options: ReplayOptions, on_done: Callable[["ReplayedCase"], None]
) -> list[ReplayedCase]:
    gate = asyncio.Semaphore(options.concurrency)
    url = api_url(options.endpoint, "/chat/completions")
    headers = {"authorization": f"Bearer {options.api_key}"} if options.api_key else {}
    limits = httpx.Limits(max_connections=options.concurrency)
    async with httpx.AsyncClient(timeout=options.timeout_s, headers=headers, limits=limits) as client:

        async def one(case: CaseSpec, repeat: int) -> ReplayedCase:
            request = ChatRequest(
                model=options.model,
                messages=case.chat_messages(),
                run_id=options.run_id,
                case_key=case.id,
                temperature=options.temperature,
                max_tokens=options.max_tokens,
                no_cache=options.no_cache,
            )
            async with gate:
                completion = await complete(client, url, request)
            replayed = ReplayedCase(case, repeat, completion)
            on_done(replayed)
            return replayed

        jobs = [one(case, repeat) for repeat in range(options.repeats) for case in cases]
        return list(await asyncio.gather(*jobs))
