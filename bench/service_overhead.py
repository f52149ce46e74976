"""What the reference service costs over its engine: the same batch straight into the engine and
through the service, bare (caches and retrieval off), + the answer caches, + retrieval.

    python bench/service_overhead.py [--requests 32] [--concurrency 8] [--max-tokens 32] [--rounds 3]
                                     [--model PATH] [--rows engine,bare,caches,retrieval] [--profile PATH]

One vLLM engine serves every row. The engine row calls it in this process; each service row is an
app around that same engine under uvicorn, driven over HTTP/SSE by a client in a separate process
(so the client's CPU is not the service's). Every path is warmed before it is measured, and
``/readyz`` is 200 before the first request. Rows run interleaved for ``--rounds`` rounds, each
round on fresh prompts, starting with a different row each round; every row of a round gets prompts
of the same lengths but its own words (identical prompts would let later rows reuse the earlier
rows' prefill through the engine's prefix cache); the figures are medians over rounds and each
service row's ratio is to the engine in the same round. Prompt lengths are long-tailed (log-normal),
as real traffic is; every request produces exactly ``--max-tokens`` tokens (``ignore_eos``, so no
answer is ever cached) so every path does the same generation work. The retrieval row also retrieves
context from a knowledge base (the acme docs, an embedded PostgreSQL) and puts it in the prompt, so
its engine has longer prompts to read.
"""

import argparse
import asyncio
import cProfile
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from opentelemetry.sdk.trace import TracerProvider

from evallens.db import migrate
from evallens.db.server import database
from evallens.service import create_app
from evallens.service.chat.prompt import PromptContext, build_messages
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.documents.loader import load_corpus, read_corpus
from evallens.service.engines import EngineError, Message, SamplingOptions, VllmEngine, vllm_options
from evallens.settings import ServiceSettings

WORDS = [
    "the", "service", "answers", "questions", "about", "traces",
    "spans", "tokens", "caches", "latency", "and", "evaluation",
]  # fmt: skip
CORPUS = Path(__file__).resolve().parent.parent / "evals" / "datasets" / "acme" / "docs"
TEMPERATURE = 0.7
ROWS = ("engine", "bare", "caches", "retrieval")
FIGURES = ("tokens_per_s", "p50_ttft_ms", "p95_ttft_ms", "p50_latency_ms", "p95_latency_ms")


@dataclass
class Sample:
    latency_s: float
    ttft_s: float
    output_tokens: int


def prompts(num: int, seed: int, row: str) -> list[str]:
    """``num`` prompts whose lengths depend on ``seed`` only and whose words also depend on ``row``.

    Every row of a round gets the same lengths but its own words: with identical prompts the engine's
    prefix cache would serve each later row's prefill from the earlier rows' work.
    """
    lengths_rng, words_rng = random.Random(seed), random.Random(f"{seed}:{row}")
    lengths = [min(int(lengths_rng.lognormvariate(3.0, 1.0)) + 3, 600) for _ in range(num)]
    return [" ".join(words_rng.choice(WORDS) for _ in range(length)) for length in lengths]


def figures(samples: list[Sample], wall_s: float) -> dict[str, float]:
    latencies = sorted(s.latency_s for s in samples)
    ttfts = sorted(s.ttft_s for s in samples)
    return {
        "tokens_per_s": sum(s.output_tokens for s in samples) / wall_s,
        "p50_ttft_ms": 1000 * statistics.median(ttfts),
        "p95_ttft_ms": 1000 * ttfts[int(0.95 * (len(ttfts) - 1))],
        "p50_latency_ms": 1000 * statistics.median(latencies),
        "p95_latency_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
    }


# The client: a separate process that drives one service URL and prints its samples as JSON.


async def client_batch(
    client: httpx.AsyncClient, texts: list[str], args: argparse.Namespace
) -> tuple[list[Sample], float]:
    gate = asyncio.Semaphore(args.concurrency)

    async def one(text: str) -> Sample:
        body = {
            "messages": [{"role": "user", "content": text}],
            "max_tokens": args.max_tokens,
            "temperature": TEMPERATURE,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        async with gate:
            started = time.perf_counter()
            first, tokens = 0.0, 0
            async with client.stream("POST", "/v1/chat/completions", json=body) as response:
                response.raise_for_status()
                async for line in response.aiter_lines():
                    if not line.startswith("data: {"):
                        continue
                    first = first or time.perf_counter()
                    if '"usage"' in line and (usage := json.loads(line[6:]).get("usage")):
                        tokens = usage["completion_tokens"]
            return Sample(time.perf_counter() - started, first - started, tokens)

    started = time.perf_counter()
    samples = list(await asyncio.gather(*(one(text) for text in texts)))
    return samples, time.perf_counter() - started


async def run_client(args: argparse.Namespace) -> None:
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    async with httpx.AsyncClient(base_url=args.client, timeout=600, limits=limits) as client:
        while (await client.get("/readyz")).status_code != 200:
            await asyncio.sleep(0.2)
        warm_up = prompts(args.concurrency, args.seed + 10_000, args.row)
        await client_batch(client, warm_up, args)
        samples, wall_s = await client_batch(client, prompts(args.requests, args.seed, args.row), args)
    print(json.dumps({"samples": [asdict(s) for s in samples], "wall_s": wall_s}))


async def through_service(url: str, row: str, seed: int, args: argparse.Namespace) -> dict[str, float]:
    command = [sys.executable, __file__, "--client", url, "--row", row, "--seed", str(seed)]
    command += ["--requests", str(args.requests), "--concurrency", str(args.concurrency)]
    command += ["--max-tokens", str(args.max_tokens)]
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    out, _ = await process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"the client for {url} failed (exit {process.returncode})")
    result = json.loads(out.decode().strip().splitlines()[-1])
    return figures([Sample(**s) for s in result["samples"]], result["wall_s"])


# The engine path and the service apps, in this process.


async def direct(
    engine: VllmEngine, settings: ServiceSettings, texts: list[str], args: argparse.Namespace
) -> tuple[list[Sample], float]:
    gate = asyncio.Semaphore(args.concurrency)
    sampling = SamplingOptions(
        max_tokens=args.max_tokens, temperature=TEMPERATURE, top_p=1.0, ignore_eos=True
    )

    async def one(index: int, text: str) -> Sample:
        async with gate:
            started = time.perf_counter()
            request = ChatCompletionRequest(messages=[{"role": "user", "content": text}])
            built = build_messages(request, PromptContext(system_prompt=settings.system_prompt))
            prompt = engine.prepare([Message(m.role, m.content) for m in built.messages])
            first, tokens = 0.0, 0
            async for chunk in engine.stream(f"direct-{index}-{started}", prompt, sampling):
                first = first or time.perf_counter()
                tokens = chunk.num_output_tokens
            return Sample(time.perf_counter() - started, first - started, tokens)

    started = time.perf_counter()
    samples = list(await asyncio.gather(*(one(i, text) for i, text in enumerate(texts))))
    return samples, time.perf_counter() - started


def row_settings(base: ServiceSettings, row: str, database_url: str | None) -> ServiceSettings:
    caches = row in ("caches", "retrieval")
    overrides: dict[str, Any] = {
        "cache_exact_enabled": caches,
        "cache_semantic_enabled": caches,
        "retrieval_enabled": row == "retrieval",
        "database_url": database_url if row == "retrieval" else None,
        "scope_min_relevance": 0.0,  # random-word questions must reach the engine, not a decline
        "otlp_endpoint": None,
        # the engine row has no budgets: a busy machine must not turn slow answers into 504s
        "ttft_budget_s": 3600.0,
        "total_budget_s": 3600.0,
    }
    return base.model_copy(update=overrides)


async def serve(app: Any) -> tuple[str, uvicorn.Server, asyncio.Task[None]]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    return f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}", server, task


@contextmanager
def knowledge_base(args: argparse.Namespace) -> Iterator[str | None]:
    """An embedded PostgreSQL at the head revision (only when the retrieval row runs)."""
    if "retrieval" not in args.rows:
        yield None
        return
    with (
        tempfile.TemporaryDirectory(prefix="evallens-bench-") as data_dir,
        database(ServiceSettings(data_dir=Path(data_dir))) as server,
    ):
        migrate.upgrade(server.url)
        yield server.url


def print_table(results: dict[str, list[dict[str, float]]]) -> None:
    header = f"{'row':>10} " + " ".join(f"{name:>15}" for name in FIGURES)
    print(header + f" {'throughput':>11} {'+p50 ms':>8} {'+p50 TTFT':>9}")
    engine = results.get("engine")
    for row, rounds in results.items():
        median = {name: statistics.median(r[name] for r in rounds) for name in FIGURES}
        line = f"{row:>10} " + " ".join(f"{median[name]:15.1f}" for name in FIGURES)
        if engine is not None and row != "engine":
            pairs = list(zip(rounds, engine, strict=True))
            ratio = statistics.median(r["tokens_per_s"] / e["tokens_per_s"] for r, e in pairs)
            added = statistics.median(r["p50_latency_ms"] - e["p50_latency_ms"] for r, e in pairs)
            added_ttft = statistics.median(r["p50_ttft_ms"] - e["p50_ttft_ms"] for r, e in pairs)
            line += f" {ratio:11.3f} {added:+8.1f} {added_ttft:+9.1f}"
        print(line)


async def main(args: argparse.Namespace) -> None:
    settings = ServiceSettings(
        model_path=args.model, max_model_len=2048, kv_cache_bytes=256 * 1024 * 1024,
        max_num_seqs=args.concurrency, max_in_flight=args.concurrency, max_queued=args.requests,
    )  # fmt: skip
    engine = VllmEngine(vllm_options(settings))
    await engine.start()
    await direct(engine, settings, prompts(args.concurrency, 10_000, "engine"), args)  # warm-up
    with knowledge_base(args) as database_url:
        servers = {}
        for row in args.rows:
            if row != "engine":
                app = create_app(row_settings(settings, row, database_url), engine, TracerProvider())
                servers[row] = await serve(app)
        if "retrieval" in servers:
            url = servers["retrieval"][0]
            await asyncio.to_thread(load_corpus, CORPUS, url)
            print(f"knowledge base: {len(read_corpus(CORPUS))} documents", flush=True)
        results: dict[str, list[dict[str, float]]] = {row: [] for row in args.rows}
        for round_index in range(args.rounds):
            seed = args.seed + round_index
            # each round starts with the next row, so no row always runs first
            shift = round_index % len(args.rows)
            for row in args.rows[shift:] + args.rows[:shift]:
                profile = cProfile.Profile() if args.profile and row == "bare" else None
                if profile is not None:
                    profile.enable()
                if row == "engine":
                    texts = prompts(args.requests, seed, row)
                    figures_ = figures(*await direct(engine, settings, texts, args))
                else:
                    figures_ = await through_service(servers[row][0], row, seed, args)
                if profile is not None:
                    profile.disable()
                    profile.dump_stats(f"{args.profile}.{round_index + 1}")
                results[row].append(figures_)
                print(
                    f"round {round_index + 1} {row:>10}: {figures_['tokens_per_s']:.1f} tokens/s", flush=True
                )
        for _, server, task in servers.values():
            server.should_exit = True
            await task
    await engine.close()
    print_table(results)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rows", type=lambda text: [row for row in text.split(",") if row], default=list(ROWS)
    )
    parser.add_argument(
        "--model", type=Path, default=None, help="model directory (default: the pulled SmolLM2)"
    )
    parser.add_argument(
        "--profile", default=None, help="cProfile this process (the service) during each bare row: PATH.N"
    )
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)  # the client process' URL
    parser.add_argument("--row", default="bare", help=argparse.SUPPRESS)  # the client's row
    args = parser.parse_args()
    if unknown := set(args.rows) - set(ROWS):
        parser.error(f"unknown rows {sorted(unknown)}; known: {', '.join(ROWS)}")
    return args


if __name__ == "__main__":
    arguments = parse_args()
    try:
        asyncio.run(run_client(arguments) if arguments.client else main(arguments))
    except EngineError as error:  # e.g. no model pulled yet: one line, not a traceback
        raise SystemExit(f"service_overhead: {error}") from None
