"""The service-overhead bench's `vllm serve` row: same engine arguments, and its table. (Its
servers' whole process groups are stopped by ``ManagedProcess``: tests/evallens/app/test_processes.py.)"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.service_overhead import SERVER_MODULE, print_table, server_command
from evallens.service.engines import VllmOptions, engine_arguments


def options(tmp_path: Path, *, prefix_caching: bool) -> VllmOptions:
    return VllmOptions(
        model_path=tmp_path / "model",
        served_model_name="bench-model",
        max_model_len=1024,
        kv_cache_bytes=64 * 1024 * 1024,
        max_num_seqs=3,
        dtype="bfloat16",
        enable_prefix_caching=prefix_caching,
        cache_dir=tmp_path / "cache",
    )


# Run in a child process: vLLM's CLI modules are large, and importing them here would change when the
# test process collects garbage (and so where other tests' leftovers are reported). One child parses
# every command the tests give it: the import is most of its time (tens of seconds on a busy machine).
PARSE_SERVER_COMMANDS = """
import dataclasses, json, sys
from vllm import AsyncEngineArgs
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser

results = []
for command, model in json.loads(sys.argv[1]):
    parser = make_arg_parser(FlexibleArgumentParser())
    served, plain = parser.parse_args(command[3:]), parser.parse_args(["--model", model])
    fields = [field.name for field in dataclasses.fields(AsyncEngineArgs) if hasattr(served, field.name)]
    changed = [name for name in fields if getattr(served, name) != getattr(plain, name)]
    results.append({"served": {name: getattr(served, name) for name in fields + ["port"]
                               if isinstance(getattr(served, name), (str, int, float, bool, list))},
                    "changed": changed})
print(json.dumps(results))
"""
PREFIX_CACHING = [True, False]


@pytest.fixture(scope="module")
def parsed_commands(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[bool, tuple[VllmOptions, dict[str, Any]]]:
    """The engine options for each ``prefix_caching`` and what vLLM's own parser makes of the bench's
    `vllm serve` command for them."""
    tmp_path = tmp_path_factory.mktemp("commands")
    engines = [options(tmp_path, prefix_caching=prefix_caching) for prefix_caching in PREFIX_CACHING]
    commands = [(server_command(engine, 24321), str(engine.model_path)) for engine in engines]
    parsed = subprocess.run(
        [sys.executable, "-c", PARSE_SERVER_COMMANDS, json.dumps(commands)],
        capture_output=True, text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    results = json.loads(parsed.stdout.strip().splitlines()[-1])
    return dict(zip(PREFIX_CACHING, zip(engines, results, strict=True), strict=True))


@pytest.mark.parametrize("prefix_caching", PREFIX_CACHING)
def test_vllm_serve_gets_the_engine_arguments_of_the_service(
    parsed_commands: dict[bool, tuple[VllmOptions, dict[str, Any]]], prefix_caching: bool
) -> None:
    engine, result = parsed_commands[prefix_caching]
    assert engine.enable_prefix_caching is prefix_caching
    command = server_command(engine, 24321)
    assert command[:3] == [sys.executable, "-m", SERVER_MODULE]
    served = result["served"]
    assert {name: served[name] for name in engine_arguments(engine)} == engine_arguments(engine)
    # vLLM's own defaults for everything else
    assert set(result["changed"]) <= set(engine_arguments(engine)) | {"generation_config"}
    assert (served["port"], served["generation_config"]) == (24321, "vllm")


def test_every_row_is_compared_with_both_ceilings(capsys: pytest.CaptureFixture[str]) -> None:
    def batch(tokens_per_s: float, p50_ms: float) -> dict[str, float]:
        return {
            "tokens_per_s": tokens_per_s, "p50_ttft_ms": p50_ms / 4, "p95_ttft_ms": p50_ms / 2,
            "p50_latency_ms": p50_ms, "p95_latency_ms": 2 * p50_ms,
        }  # fmt: skip

    print_table({
        "engine": [batch(100, 1000), batch(120, 900)],
        "vllm-serve": [batch(110, 950), batch(110, 1000)],
        "bare": [batch(99, 1010), batch(121, 1002)],
    })  # fmt: skip
    against = capsys.readouterr().out.split("against ")
    engine, serve = against[1].splitlines(), against[2].splitlines()
    assert engine[0] == "engine:" and serve[0] == "vllm-serve:"
    # medians of per-round ratios and p50 differences: bare/engine (0.99 + 1.0083) / 2, (10 + 102) / 2
    assert engine[2].split()[:2] == ["vllm-serve", "1.008"] and engine[2].split()[4] == "+25.0"
    assert engine[3].split()[:2] == ["bare", "0.999"] and engine[3].split()[4] == "+56.0"
    assert serve[2].split()[:2] == ["bare", "1.000"] and serve[2].split()[4] == "+31.0"
    assert len(serve) == 3  # the engine row is not compared with vllm serve twice
