"""The one small interface every inference engine offers the service."""

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pydantic import JsonValue

from evallens.errors import EvallensError

JSONValue = JsonValue


class EngineError(EvallensError):
    """The engine failed a request (not the caller's fault)."""


class EngineMalformedReply(EngineError):
    """The engine answered something its protocol does not allow (not a stream event, say)."""


class EngineFailed(EngineError):
    """The engine said it failed the request (an error event in its stream): the answer is cut, retryable."""


class EngineOverloaded(EngineError):
    """The engine is at capacity (an upstream's 429): retryable, after ``retry_after_s`` when it said."""

    def __init__(self, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class EngineRejected(EvallensError):
    """The engine refused a request as invalid (the caller's fault: maps to HTTP 400)."""


@dataclass(frozen=True)
class Message:
    """One chat turn."""

    role: str
    content: str


@dataclass(frozen=True)
class SamplingOptions:
    """Everything that changes how tokens are drawn, per request."""

    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None = None
    stop: tuple[str, ...] = ()
    min_tokens: int = 0
    ignore_eos: bool = False


@dataclass(frozen=True)
class Prompt:
    """Messages rendered for one engine: the token ids when the engine can count them locally."""

    messages: tuple[Message, ...]
    token_ids: tuple[int, ...] | None = None

    @property
    def num_tokens(self) -> int | None:
        """Prompt length in tokens, or None when only the remote server knows."""
        return None if self.token_ids is None else len(self.token_ids)


@dataclass(frozen=True)
class GenerationChunk:
    """New text since the last chunk, with running token counts; ``finish_reason`` on the last one."""

    text: str
    num_prompt_tokens: int
    num_output_tokens: int
    finish_reason: str | None = None
    engine_queue_s: float | None = None


@dataclass
class GenerationResult:
    """A whole answer, gathered from the chunks."""

    text: str = ""
    num_prompt_tokens: int = 0
    num_output_tokens: int = 0
    finish_reason: str | None = None
    chunks: list[GenerationChunk] = field(default_factory=list)


@runtime_checkable
class Engine(Protocol):
    """An inference engine: vLLM in this process, or any OpenAI-compatible server."""

    provider: str
    model_name: str
    max_model_len: int | None

    async def start(self) -> None:
        """Load the model or reach the server; idempotent."""

    async def close(self) -> None:
        """Release the engine."""

    def is_ready(self) -> bool:
        """True once the engine answers requests."""

    def failure(self) -> str | None:
        """Why the engine answers nothing until the service restarts (it died), in words a client may
        read; None while it may still answer (ready, or still starting)."""

    def prepare(self, messages: Sequence[Message]) -> Prompt:
        """Render the chat messages for this engine (tokenizing them when it can)."""

    def stream(
        self, request_id: str, prompt: Prompt, sampling: SamplingOptions
    ) -> AsyncGenerator[GenerationChunk, None]:
        """Generate, yielding chunks as tokens arrive; cancelling the iteration aborts the request."""

    async def abort(self, request_id: str) -> None:
        """Stop a running request and free its resources; a finished or unknown id is ignored."""

    def num_unfinished_requests(self) -> int:
        """Requests the engine is still working on."""

    def config(self) -> dict[str, JSONValue]:
        """Everything about the engine that changes answers (model identity, dtype, ...)."""


async def generate(
    engine: Engine, request_id: str, prompt: Prompt, sampling: SamplingOptions
) -> GenerationResult:
    """Run a request to the end and gather its answer."""
    result = GenerationResult()
    async for chunk in engine.stream(request_id, prompt, sampling):
        result.text += chunk.text
        result.num_prompt_tokens = chunk.num_prompt_tokens
        result.num_output_tokens = chunk.num_output_tokens
        result.finish_reason = chunk.finish_reason or result.finish_reason
        result.chunks.append(chunk)
    return result
