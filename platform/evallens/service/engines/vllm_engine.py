"""vLLM's async engine in this process (the engine core runs in a child process vLLM manages)."""

import asyncio
import hashlib
import json
import os
import tempfile
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evallens.service.engines.base import (
    EngineError,
    EngineOverloaded,
    EngineRejected,
    GenerationChunk,
    JSONValue,
    Message,
    Prompt,
    SamplingOptions,
)
from evallens.settings import set_process_environment

MANIFEST = "evallens-model.json"
# CPU features that compute bfloat16 natively (x86 AVX512-BF16 and AMX; Arm's BF16 extension). Without
# one, torch emulates bfloat16 matmuls: measured here (AVX2 only), SmolLM2-135M decoded 4.3x slower in
# bfloat16 than in float32 with 8 requests in flight (11.6 against 49.8 tokens/s), 1.6x with one.
NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})
CPUINFO = Path("/proc/cpuinfo")
# vLLM names each socket to its engine core <VLLM_RPC_BASE_PATH>/<uuid4>; Linux holds at most 107 bytes
# of a socket path (sizeof(sockaddr_un.sun_path) less its NUL), or binding fails and the engine never loads
MAX_SOCKET_PATH_BYTES = 107
SOCKET_NAME_BYTES = len("/") + 36  # a uuid4 in its usual text form
ENGINE_DEAD = "The vLLM engine died (EngineDeadError): it answers nothing until a restart."


@dataclass(frozen=True)
class VllmOptions:
    """What the service tells vLLM: the model, its context window, memory and batching."""

    model_path: Path
    served_model_name: str
    max_model_len: int
    kv_cache_bytes: int
    max_num_seqs: int
    dtype: str
    enable_prefix_caching: bool
    cache_dir: Path
    # vLLM's stats: its Prometheus ``vllm:*`` metrics and its periodic log line. The metrics live in the
    # process's registry, and an engine that starts with them unregisters those of any engine before it.
    log_stats: bool = True
    # Whether `evallens model pull` prepares this directory (the default chat model's): only then does a
    # missing model there call for it; a directory the user named holds their own model or none.
    pulled: bool = False


def vllm_environment(cache_dir: Path) -> dict[str, str]:
    """Variables vLLM and torch read: in-process engine, one OpenMP thread, caches in our data dir."""
    rpc_dir = rpc_directory(cache_dir)
    return {
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        # More threads than free cores makes CPU inference up to 30x slower.
        "OMP_NUM_THREADS": "1",
        "VLLM_CACHE_ROOT": str(cache_dir / "vllm"),
        "VLLM_RPC_BASE_PATH": str(rpc_dir),
        "TORCHINDUCTOR_CACHE_DIR": str(cache_dir / "torchinductor"),
        "TMPDIR": str(cache_dir / "tmp"),
        "VLLM_NO_USAGE_STATS": "1",
        "HF_HUB_OFFLINE": "1",
    }


def rpc_directory(cache_dir: Path) -> Path:
    """Where vLLM puts the Unix sockets to its engine core: in the cache dir, or, when a socket path there
    would be too long for the kernel (a deep data dir), in a private directory under the system's temp."""
    preferred = cache_dir / "vllm-rpc"
    if len(os.fsencode(preferred)) + SOCKET_NAME_BYTES <= MAX_SOCKET_PATH_BYTES:
        preferred.mkdir(parents=True, exist_ok=True)
        return preferred
    short = Path(tempfile.gettempdir()) / f"evallens-vllm-rpc-{os.geteuid()}"
    short.mkdir(mode=0o700, exist_ok=True)
    short.chmod(0o700)  # mkdir's mode is masked, and the directory may be older
    return short


def effective_dtype(dtype: str) -> str:
    """The dtype vLLM is given: ``auto`` is bfloat16 on a GPU or a CPU that computes it natively, else
    float32 (emulated bfloat16 is several times slower); any other value as it is."""
    if dtype != "auto":
        return dtype
    import torch

    return choose_dtype(cuda=torch.cuda.is_available(), cpu_flags=cpu_flags())


def choose_dtype(*, cuda: bool, cpu_flags: frozenset[str]) -> str:
    """bfloat16 where the hardware computes it natively, float32 elsewhere."""
    return "bfloat16" if cuda or cpu_flags & NATIVE_BF16_CPU_FLAGS else "float32"


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux's ``/proc/cpuinfo``: x86 ``flags``, Arm ``Features``); empty
    where it cannot be read."""
    try:
        text = CPUINFO.read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def engine_arguments(options: VllmOptions) -> dict[str, Any]:
    """vLLM's engine arguments for these options (also what a `vllm serve` of the same engine is given)."""
    arguments: dict[str, Any] = {
        "model": str(options.model_path),
        "served_model_name": [options.served_model_name],
        "max_model_len": options.max_model_len,
        "kv_cache_memory_bytes": options.kv_cache_bytes,
        "max_num_seqs": options.max_num_seqs,
        "dtype": options.dtype,
        "enable_prefix_caching": options.enable_prefix_caching,
        "distributed_executor_backend": "uni",
        "enforce_eager": True,
    }
    if not options.log_stats:  # only when set: `vllm serve` has `--disable-log-stats` and no negation
        arguments["disable_log_stats"] = True
    return arguments


def weights_sha256(model_path: Path) -> str:
    """The checksum `evallens model pull` recorded, else a hash of the weight files (model identity)."""
    manifest = model_path / MANIFEST
    if manifest.exists():
        return str(json.loads(manifest.read_text())["sha256"])
    digest = hashlib.sha256()
    for weights in sorted(model_path.glob("*.safetensors")):
        digest.update(weights.read_bytes())
    return digest.hexdigest()


class VllmEngine:
    """vLLM ``AsyncLLM`` behind the service's engine interface."""

    provider = "vllm"

    def __init__(self, options: VllmOptions) -> None:
        self.options = options
        self.model_name = options.served_model_name
        self.max_model_len: int | None = options.max_model_len
        self._llm: Any = None
        self._tokenizer: Any = None
        self._weights_sha256: str | None = None  # read on first use: the fingerprint needs no load
        self._start_lock = asyncio.Lock()

    async def start(self) -> None:
        """Load the model (tens of seconds on CPU) without blocking the event loop."""
        async with self._start_lock:
            if self._llm is None:
                # Two calls: importing vLLM keeps an error it caught (torchcodec missing) with its traceback,
                # whose frames reach every caller of the import. In the call that returns the engine, they
                # held the engine past close() until exit, when its __del__ fails on torn-down modules.
                await asyncio.to_thread(self._prepare)
                self._llm = await asyncio.to_thread(self._load)

    def _prepare(self) -> None:
        """Check the model is there, set vLLM's environment and import vLLM (which reads it)."""
        path = self.options.model_path
        if not (path / "config.json").exists():
            if self.options.pulled:
                raise EngineError(f"no model at {path}: run `evallens model pull`")
            raise EngineError(f"no model at {path} (no config.json there)")
        set_process_environment(vllm_environment(self.options.cache_dir))
        (self.options.cache_dir / "tmp").mkdir(parents=True, exist_ok=True)
        import vllm.engine.arg_utils
        import vllm.v1.engine.async_llm  # noqa: F401

    def _load(self) -> Any:
        from transformers import AutoTokenizer
        from vllm import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self._tokenizer = AutoTokenizer.from_pretrained(self.options.model_path)
        try:
            return AsyncLLM.from_engine_args(AsyncEngineArgs(**engine_arguments(self.options)))
        except ValidationError as error:  # vLLM refused a setting (a max_model_len past the model's)
            raise EngineError(f"vLLM refused the engine's settings: {_refusals(error)}") from error

    async def close(self) -> None:
        """Shut the engine core down."""
        if self._llm is not None:
            llm, self._llm = self._llm, None
            await asyncio.to_thread(llm.shutdown)

    def is_ready(self) -> bool:
        """True once the model is loaded and the engine has not died."""
        return self._llm is not None and not self._llm.errored

    def failure(self) -> str | None:
        """What a dead engine core (killed, or failed) is told as; None while it may answer."""
        return ENGINE_DEAD if self._llm is not None and self._llm.errored else None

    def prepare(self, messages: Sequence[Message]) -> Prompt:
        """Apply the model's chat template and tokenize, so the edge can check the context length."""
        if self._tokenizer is None:
            raise EngineError("the vLLM engine is not started")
        turns = [{"role": message.role, "content": message.content} for message in messages]
        try:
            text = self._tokenizer.apply_chat_template(turns, add_generation_prompt=True, tokenize=False)
        except Exception as error:  # jinja raises for role orders a template forbids
            raise EngineRejected(f"the chat template rejected the messages: {error}") from error
        token_ids = self._tokenizer.encode(text, add_special_tokens=False)
        return Prompt(messages=tuple(messages), token_ids=tuple(token_ids))

    async def stream(
        self, request_id: str, prompt: Prompt, sampling: SamplingOptions
    ) -> AsyncGenerator[GenerationChunk, None]:
        """Stream deltas from vLLM; leaving the loop early (cancel, close) aborts the engine request."""
        from vllm import SamplingParams
        from vllm.exceptions import VLLMError
        from vllm.inputs.engine import tokens_input
        from vllm.sampling_params import RequestOutputKind

        if self._llm is None or prompt.token_ids is None:
            raise EngineError("the vLLM engine is not started")
        num_output_tokens = 0
        finished = False
        try:
            params = SamplingParams(
                max_tokens=sampling.max_tokens,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                seed=sampling.seed,
                stop=list(sampling.stop) or None,
                min_tokens=sampling.min_tokens,
                ignore_eos=sampling.ignore_eos,
                output_kind=RequestOutputKind.DELTA,
            )
            async for output in self._llm.generate(tokens_input(list(prompt.token_ids)), params, request_id):
                completion = output.outputs[0]
                num_output_tokens += len(completion.token_ids)
                finished = output.finished
                yield GenerationChunk(
                    text=completion.text,
                    num_prompt_tokens=len(prompt.token_ids),
                    num_output_tokens=num_output_tokens,
                    finish_reason=completion.finish_reason if output.finished else None,
                    engine_queue_s=_queue_time_s(output.metrics),
                )
        except VLLMError as error:  # a bug's error (no vLLM error) is raised as it is
            raise engine_error(error) from error
        finally:
            if not finished:
                await self.abort(request_id)

    async def abort(self, request_id: str) -> None:
        """Abort in vLLM's output processor and engine core."""
        if self._llm is not None:
            await self._llm.abort(request_id)

    def num_unfinished_requests(self) -> int:
        """Requests vLLM still tracks (running or waiting)."""
        return 0 if self._llm is None else int(self._llm.get_num_unfinished_requests())

    def config(self) -> dict[str, JSONValue]:
        """Model identity and the engine settings that change answers; known before the model loads."""
        from vllm import __version__ as vllm_version

        if self._weights_sha256 is None:
            self._weights_sha256 = weights_sha256(self.options.model_path)
        return {
            "provider": self.provider,
            "model": self.model_name,
            "weights_sha256": self._weights_sha256,
            "dtype": self.options.dtype,
            "max_model_len": self.options.max_model_len,
            "max_num_seqs": self.options.max_num_seqs,
            "enable_prefix_caching": self.options.enable_prefix_caching,
            "vllm_version": str(vllm_version),
        }


def engine_error(error: Exception) -> EngineError | EngineRejected:
    """vLLM's error as the engine's: a refusal of the request (``VLLMClientError``: a prompt longer than the
    context window, sampling parameters out of range) the client's fault; the engine at capacity
    (``GracefulHTTPError``: its request queue full) an overload; any other (a dead engine core, a request
    that failed) the engine's failure, in words a client may read."""
    from vllm.exceptions import GracefulHTTPError, VLLMClientError
    from vllm.v1.engine.exceptions import EngineDeadError, EngineGenerateError

    if isinstance(error, VLLMClientError):
        return EngineRejected(f"vLLM refused the request: {error}")
    if isinstance(error, GracefulHTTPError):
        return EngineOverloaded(f"vLLM is at capacity: {error}")
    if isinstance(error, EngineDeadError):  # its own words point to a stack trace only the log has
        return EngineError(ENGINE_DEAD)
    if isinstance(error, EngineGenerateError) and error.__cause__ is not None:  # it has no words of its own
        return EngineError(f"The vLLM engine failed the request: {_said(error.__cause__)}")
    return EngineError(f"The vLLM engine failed the request: {_said(error)}")


def _refusals(error: ValidationError) -> str:
    """What a pydantic ``ValidationError`` of vLLM's config says, one line: the first sentence of each
    refusal (vLLM goes on with advice on environment variables that lift its checks)."""
    said = []
    for refusal in error.errors():
        words = " ".join(str(refusal["msg"]).removeprefix("Value error, ").split())
        said.append(words.split(". ")[0].rstrip("."))
    return "; ".join(said)


def _said(error: BaseException) -> str:
    """An error by its class and words (some have none)."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _queue_time_s(metrics: Any) -> float | None:
    """Seconds the request waited in vLLM's scheduler, once it was scheduled."""
    queued, scheduled = getattr(metrics, "queued_ts", 0.0), getattr(metrics, "scheduled_ts", 0.0)
    return scheduled - queued if queued and scheduled else None
