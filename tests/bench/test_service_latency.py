"""The service-overhead bench's latency mode: one request at a time, paired, alternating, compared."""

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.service_overhead import (
    Difference,
    Pair,
    across_starts,
    bench_engine_needed,
    paired_difference,
    paired_requests,
    print_latency,
    print_start_rounds,
    print_starts,
)
from evallens.service.weights.tiny import build_tiny_llama

BENCH = Path(__file__).resolve().parents[2] / "bench" / "service_overhead.py"


def test_the_interval_is_the_sign_test_interval() -> None:
    # n = 10: d(2) .. d(9) covers 97.9% (d(3) .. d(8) only 89%); n = 100: d(40) .. d(61), 96.5%
    ten = paired_difference([float(v) for v in range(10, 0, -1)])
    assert (ten.median, ten.low, ten.high, ten.num_pairs) == (5.5, 2.0, 9.0, 10)
    assert ten.coverage == pytest.approx(1 - 2 * 11 / 1024)
    hundred = paired_difference([float(v) for v in range(1, 101)])
    assert (hundred.low, hundred.high, round(hundred.coverage, 3)) == (40.0, 61.0, 0.965)


def test_too_few_pairs_say_how_little_their_interval_covers() -> None:
    three = paired_difference([3.0, -1.0, 2.0])
    assert (three.median, three.low, three.high, three.coverage) == (2.0, -1.0, 3.0, 0.75)


def test_the_interval_over_starts_is_students_t_over_their_medians() -> None:
    # mean 4, sample sd 2 (3 starts): 4 -/+ t(0.975, 2) * 2 / sqrt(3) = 4 -/+ 4.968
    summary = across_starts([2.0, 6.0, 4.0])
    assert (summary.mean, summary.num_starts) == (4.0, 3)
    assert (summary.low, summary.high) == pytest.approx((4 - 4.9683, 4 + 4.9683), abs=1e-3)


def test_the_starts_are_shown_side_by_side_with_their_mean(capsys: pytest.CaptureFixture[str]) -> None:
    def start(ttft: float, latency: float) -> dict[str, Difference]:
        return {
            "TTFT": Difference(ttft, ttft - 1, ttft + 1, 50, 0.95),
            "latency": Difference(latency, latency - 5, latency + 5, 50, 0.95),
        }

    print_starts([start(1.0, 9.0), start(-1.0, -3.0), start(0.0, 3.0)], "a", "b")
    out = capsys.readouterr().out
    assert "a minus b, 3 starts of both servers" in out
    assert re.search(r"^\s+2\s+-1\.0\s+-3\.0$", out, re.MULTILINE), out
    # the mean of the starts' medians, not the pooled pairs: latency (9 - 3 + 3) / 3 = 3
    assert re.search(r"^\s+latency\s+\+3\.0 \[-11\.9, \+17\.9\]$", out, re.MULTILINE), out


def stream(text: str, tokens: int) -> str:
    chunk = {"choices": [{"delta": {"content": text}}]}
    usage = {"choices": [], "usage": {"completion_tokens": tokens}}
    return f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(usage)}\n\ndata: [DONE]\n\n"


def test_pairs_ask_both_paths_the_same_question_in_alternating_order() -> None:
    asked: list[tuple[str, list[dict[str, str]]]] = []

    def server(path: str) -> httpx.MockTransport:
        def answer(request: httpx.Request) -> httpx.Response:
            asked.append((path, json.loads(request.content)["messages"]))
            return httpx.Response(200, text=stream("hi", 2), headers={"content-type": "text/event-stream"})

        return httpx.MockTransport(answer)

    async def run() -> list[Pair]:
        paths = ("bare", "vllm-serve")
        clients = {path: httpx.AsyncClient(transport=server(path), base_url="http://x") for path in paths}
        args = argparse.Namespace(max_tokens=2, system_prompt="Be brief.")
        try:
            return await paired_requests(clients, ["one", "two", "three"], args)
        finally:
            for client in clients.values():
                await client.aclose()

    pairs = asyncio.run(run())
    assert [path for path, _ in asked] == ["bare", "vllm-serve", "vllm-serve", "bare", "bare", "vllm-serve"]
    # the service adds its system prompt itself; vllm serve is sent the whole prompt
    assert asked[0][1] == [{"role": "user", "content": "one"}]
    assert asked[1][1] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "one"}]
    assert [messages[-1]["content"] for _, messages in asked] == ["one"] * 2 + ["two"] * 2 + ["three"] * 2
    assert len(pairs) == 3
    for pair in pairs:
        assert pair.output_tokens == {"bare": 2, "vllm-serve": 2}
        assert all(0 < pair.ttft_s[path] <= pair.latency_s[path] for path in ("bare", "vllm-serve"))


def test_the_table_shows_both_paths_and_the_paired_differences(capsys: pytest.CaptureFixture[str]) -> None:
    pairs = [
        Pair(latency_s={"a": 0.100 + i / 1000, "b": 0.098}, ttft_s={"a": 0.050, "b": 0.049 - i / 1000},
             output_tokens={"a": 8, "b": 8})
        for i in range(7)
    ]  # fmt: skip
    differences = print_latency(pairs, "a", "b")
    out = capsys.readouterr().out
    assert "(7 pairs" in out and "a minus b" in out
    assert differences["latency"].median == pytest.approx(5.0) and differences[
        "TTFT"
    ].median == pytest.approx(4.0)
    assert re.search(r"^\s+a\s+50\.0\s+50\.0\s+103\.0\s+105\.0$", out, re.MULTILINE)
    assert re.search(r"^\s+latency\s+\+5\.0 \[\+2\.0, \+8\.0, 98\.4%\] n=7$", out, re.MULTILINE)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tiny model for this file's runs of the bench (they only read it)."""
    return build_tiny_llama(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def data_dir() -> Iterator[str]:
    """One data directory for this file's runs of the bench: vLLM's caches there (its model-class
    inspection, a subprocess of tens of CPU seconds per engine start on a cold cache) are paid once.
    vLLM's IPC socket paths live under it and must stay under 107 characters (an xdist worker's
    tmp_path is too long)."""
    with tempfile.TemporaryDirectory(prefix="evl-", dir="/tmp") as data:
        yield data


@pytest.mark.slow
def test_the_latency_mode_on_a_tiny_model(tiny_model: Path, data_dir: str) -> None:
    """The whole mode, twice (``--starts 2``): both servers up, every pair answered by both, the
    figures printed for each start, then both servers started afresh and their mean over starts."""
    command = [sys.executable, str(BENCH), "--model", str(tiny_model), "--rows", "vllm-serve,bare"]
    command += ["--rounds", "0", "--latency", "6", "--max-tokens", "2", "--concurrency", "2"]
    command += ["--starts", "2"]
    environment = {**os.environ, "EVALLENS_DATA_DIR": data_dir, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "tokens/s" not in out  # --rounds 0: no batches
    assert out.count("latency, one request at a time (6 pairs") == 2
    assert "start 2 of 2: the servers and engines started afresh" in out
    assert out.count("answers not 2 tokens long: 0 of 12") == 2
    summary = out[out.index("bare minus vllm-serve, 2 starts of both servers") :]
    starts = re.findall(r"^ +[12] +([-+]\d+\.\d) +([-+]\d+\.\d)$", summary, re.MULTILINE)
    assert len(starts) == 2, summary
    mean = re.search(r"^ +latency +([-+]\d+\.\d) \[", summary, re.MULTILINE)
    assert mean, summary
    assert float(mean[1]) == pytest.approx(sum(float(latency) for _, latency in starts) / 2, abs=0.06)
    used = re.search(
        r"^CPU ms, engine steps and prompt tokens per request of a path: (.*)$", out, re.MULTILINE
    )
    assert used, out
    parties = dict(part.rsplit(" ", 1) for part in used[1].split(", "))
    # the bare service is a server process of its own, with its own engine (its core a child of it)
    assert {"bare", "bare children", "vllm-serve", "vllm-serve children"} <= set(parties)
    assert float(parties["bare steps"]) > 0 and float(parties["vllm-serve steps"]) > 0
    assert float(parties["bare children"]) > 0 and float(parties["vllm-serve children"]) > 0
    assert float(parties["bench engine steps"]) == 0  # the bench's own engine took no part
    # the same question to both paths: the same prompt tokens per request, the system prompt included
    assert float(parties["bare prompt tokens"]) == float(parties["vllm-serve prompt tokens"]) > 0
    for path in ("bare", "vllm-serve"):
        assert re.search(rf"^ *{path}( +\d+\.\d){{4}}$", out, re.MULTILINE), out
    for figure in ("TTFT", "latency"):
        found = re.search(rf"^ *{figure} +(\S+) \[(\S+), (\S+), (\S+)%\] n=6$", out, re.MULTILINE)
        assert found, out
        median, low, high = (float(found[i]) for i in (1, 2, 3))
        assert low <= median <= high


@pytest.mark.slow
def test_the_control_pairs_two_identical_vllm_serves(tiny_model: Path, data_dir: str) -> None:
    """``--control``: the same pairs between two `vllm serve`s of one engine (an A/A run), no service."""
    command = [sys.executable, str(BENCH), "--model", str(tiny_model), "--control", "--latency", "4"]
    command += ["--max-tokens", "2", "--concurrency", "2"]
    environment = {**os.environ, "EVALLENS_DATA_DIR": data_dir, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "latency, one request at a time (4 pairs" in out and "vllm-serve-b minus vllm-serve" in out
    assert "answers not 2 tokens long: 0 of 8" in out
    used = re.search(
        r"^CPU ms, engine steps and prompt tokens per request of a path: (.*)$", out, re.MULTILINE
    )
    assert used, out
    parties = dict(part.rsplit(" ", 1) for part in used[1].split(", "))
    assert set(parties) == {
        f"{path}{part}"
        for path in ("vllm-serve", "vllm-serve-b")
        for part in ("", " children", " steps", " prompt tokens")
    }
    # each server ran its own engine's steps: 2 tokens a request, the first with the prompt
    assert float(parties["vllm-serve steps"]) > 0 and float(parties["vllm-serve-b steps"]) > 0
    for path in ("vllm-serve", "vllm-serve-b"):
        assert re.search(rf"^ *{path}( +\d+\.\d){{4}}$", out, re.MULTILINE), out


def test_only_the_engine_row_or_a_prompt_check_without_a_bare_service_starts_the_bench_engine() -> None:
    def needed(rows: str, rounds: int = 3, *, control: bool = False) -> bool:
        return bench_engine_needed(argparse.Namespace(rows=rows.split(","), rounds=rounds, control=control))

    # the latency mode and the control run: two engines (the servers'), not a third of the bench's
    assert not needed("vllm-serve,bare", rounds=0)
    assert not needed("engine,vllm-serve,bare", rounds=0)
    assert not needed("vllm-serve,bare", rounds=0, control=True)
    assert not needed("vllm-serve,bare,caches,retrieval")
    assert needed("engine,bare")
    # `vllm serve`'s prompt check has no bare service to count the prompt: the bench's engine does
    assert needed("vllm-serve,caches")


def test_control_needs_latency_pairs() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--control"], capture_output=True, text=True)
    assert done.returncode == 2 and "--control needs --latency PAIRS" in done.stderr


def test_starts_are_one_or_more() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--starts", "0"], capture_output=True, text=True)
    assert done.returncode == 2 and "--starts must be 1 or more" in done.stderr


def test_the_batches_of_each_start_are_shown_with_their_mean(capsys: pytest.CaptureFixture[str]) -> None:
    starts = [
        {"bare / vllm-serve": {"throughput": ratio, "p50 ms": added}}
        for ratio, added in ((0.96, 40.0), (1.00, -20.0), (0.98, 10.0))
    ]
    print_start_rounds(starts)
    out = capsys.readouterr().out
    assert "3 starts of the servers" in out
    assert re.search(r"^ +bare / vllm-serve +2 +1\.000 +-20\.0$", out, re.MULTILINE), out
    # ratios: mean 0.98, sd 0.02, t(0.975, 2) * 0.02 / sqrt(3) = 0.050; p50: mean 10, sd 30 -> 74.5
    assert re.search(r"^ +bare / vllm-serve +mean +0\.980 +\+10\.0$", out, re.MULTILINE), out
    assert re.search(r"^ +t 95% 0\.930-1\.030 -64\.5\.\.\+84\.5$", out, re.MULTILINE), out
