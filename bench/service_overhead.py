"""What the reference service costs over its engine: the same batch, straight into the engine and
through the service (HTTP, SSE, limits, tracing, metrics), in one run on one engine.

    python bench/service_overhead.py [--requests 32] [--concurrency 8] [--max-tokens 32] [--model PATH]

Prompt lengths are long-tailed (log-normal), as real traffic is. Every request produces exactly
``--max-tokens`` tokens (``ignore_eos``) so both paths do the same work. The HTTP client runs in the
same process as the service, so the service figures include the client's own cost.
"""

import argparse
import asyncio
import json
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import uvicorn
from opentelemetry.sdk.trace import TracerProvider

from evallens.service import create_app
from evallens.service.chat.prompt import PromptContext, build_messages
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.engines import Message, SamplingOptions, VllmEngine, vllm_options
from evallens.settings import ServiceSettings

WORDS = [
    "the",
    "service",
    "answers",
    "questions",
    "about",
    "traces",
    "spans",
    "tokens",
    "caches",
    "latency",
    "and",
    "evaluation",
]


@dataclass
class Sample:
    latency_s: float
    ttft_s: float
    output_tokens: int


def prompts(num: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lengths = [min(int(rng.lognormvariate(3.0, 1.0)) + 3, 600) for _ in range(num)]
    return [" ".join(rng.choice(WORDS) for _ in range(length)) for length in lengths]


async def direct(
    engine: VllmEngine, settings: ServiceSettings, texts: list[str], args: argparse.Namespace
) -> list[Sample]:
    gate = asyncio.Semaphore(args.concurrency)
    sampling = SamplingOptions(max_tokens=args.max_tokens, temperature=0.7, top_p=1.0, ignore_eos=True)

    async def one(index: int, text: str) -> Sample:
        async with gate:
            started = time.perf_counter()
            request = ChatCompletionRequest(messages=[{"role": "user", "content": text}])
            built = build_messages(request, PromptContext(system_prompt=settings.system_prompt))
            prompt = engine.prepare([Message(m.role, m.content) for m in built.messages])
            first, tokens = 0.0, 0
            async for chunk in engine.stream(f"direct-{index}", prompt, sampling):
                first = first or time.perf_counter()
                tokens = chunk.num_output_tokens
            return Sample(time.perf_counter() - started, first - started, tokens)

    return list(await asyncio.gather(*(one(i, text) for i, text in enumerate(texts))))


async def through_service(url: str, texts: list[str], args: argparse.Namespace) -> list[Sample]:
    gate = asyncio.Semaphore(args.concurrency)
    limits = httpx.Limits(max_connections=args.concurrency)

    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:

        async def one(text: str) -> Sample:
            body = {
                "messages": [{"role": "user", "content": text}],
                "max_tokens": args.max_tokens,
                "ignore_eos": True,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            async with gate:
                started = time.perf_counter()
                first, tokens = 0.0, 0
                async with client.stream("POST", "/v1/chat/completions", json=body) as response:
                    async for line in response.aiter_lines():
                        if not line.startswith("data: {"):
                            continue
                        first = first or time.perf_counter()
                        if usage := json.loads(line[6:]).get("usage"):
                            tokens = usage["completion_tokens"]
                return Sample(time.perf_counter() - started, first - started, tokens)

        return list(await asyncio.gather(*(one(text) for text in texts)))


def summary(name: str, samples: list[Sample], wall_s: float) -> dict[str, float]:
    latencies = sorted(s.latency_s for s in samples)
    ttfts = sorted(s.ttft_s for s in samples)
    figures = {
        "tokens_per_s": sum(s.output_tokens for s in samples) / wall_s,
        "p50_latency_ms": 1000 * statistics.median(latencies),
        "p95_latency_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
        "p50_ttft_ms": 1000 * statistics.median(ttfts),
        "p95_ttft_ms": 1000 * ttfts[int(0.95 * (len(ttfts) - 1))],
    }
    print(f"{name:>8}: " + "  ".join(f"{key} {value:8.1f}" for key, value in figures.items()))
    return figures


async def main(args: argparse.Namespace) -> None:
    settings = ServiceSettings(
        model_path=args.model, max_model_len=2048, kv_cache_bytes=256 * 1024 * 1024,
        max_num_seqs=args.concurrency, max_in_flight=args.concurrency, max_queued=args.requests,
    )  # fmt: skip
    engine = VllmEngine(vllm_options(settings))
    await engine.start()
    texts = prompts(args.requests, args.seed)
    await direct(engine, settings, texts[: args.concurrency], args)  # warm-up
    started = time.perf_counter()
    direct_samples = await direct(engine, settings, texts, args)
    direct_figures = summary("engine", direct_samples, time.perf_counter() - started)

    app = create_app(settings, engine=engine, tracer_provider=TracerProvider())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    started = time.perf_counter()
    service_samples = await through_service(url, texts, args)
    service_figures = summary("service", service_samples, time.perf_counter() - started)
    server.should_exit = True
    await serving
    await engine.close()

    ratio = service_figures["tokens_per_s"] / direct_figures["tokens_per_s"]
    added_ms = service_figures["p50_latency_ms"] - direct_figures["p50_latency_ms"]
    cost = 100 * (1 - ratio)
    print(f"service/engine throughput {ratio:.3f} ({cost:+.1f}% cost); p50 latency {added_ms:+.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--model", type=Path, default=None, help="model directory (default: the pulled SmolLM2)"
    )
    asyncio.run(main(parser.parse_args()))
