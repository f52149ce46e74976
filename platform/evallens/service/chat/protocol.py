"""``POST /v1/chat/completions``: OpenAI-schema request, response and stream-chunk models."""

import time
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from evallens.service.text import UnicodeText

# vLLM's own OpenAI server takes a seed as a signed 64-bit integer; outside that range its engine fails
# the request, a 503 that would count against the engine's breaker.
SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1
# vLLM checks every stop sequence against the answer after every token, on the event loop and without a
# limit of its own; OpenAI's API takes up to 4.
MAX_STOP_SEQUENCES = 16
# What OpenAI's API offers and this service cannot do, with the values that ask for none of it (clients
# send those as defaults). Ignored, a request asking for more got something else than it asked for: one
# choice for n=3, free text for a JSON schema, text for a required tool call, no log probabilities.
NOT_SERVED = {
    "n": ((None, 1), "this service makes one choice per request: send n=1 or several requests"),
    "response_format": ((None, {"type": "text"}), "this service answers in free text only"),
    "tools": ((None, []), "this service calls no tools"),
    "tool_choice": ((None, "none", "auto"), "this service calls no tools"),
    "functions": ((None, []), "this service calls no functions"),
    "function_call": ((None, "none", "auto"), "this service calls no functions"),
    "logprobs": ((None, False), "this service returns no log probabilities"),
    "top_logprobs": ((None, 0), "this service returns no log probabilities"),
}


# Flags and numbers of a request are strict, as OpenAI's API is: a JSON true or false for a flag, a number
# for a number. Lax parsing took "stream": "yes" or 1, "max_tokens": true (1) or "256", "temperature": "0".
Flag = Annotated[bool, Strict()]
Integer = Annotated[int, Strict()]
Number = Annotated[float, Strict()]  # an integer is a number too


class TextPart(BaseModel):
    """A text part of a message's ``content`` given as an array of parts (as OpenAI's SDKs send it)."""

    type: Literal["text"]
    text: UnicodeText


TEXT_PARTS = TypeAdapter(list[TextPart])


class ChatMessage(BaseModel):
    """One chat turn (text content only); content given as an array of text parts is joined as vLLM
    joins it, one part a line."""

    role: Literal["system", "user", "assistant"]
    content: UnicodeText

    @field_validator("content", mode="before")
    @classmethod
    def _join_text_parts(cls, content: Any) -> Any:
        """OpenAI's clients send content as ``[{"type": "text", "text": ...}]``: refused as "not a
        string", so no SDK request with parts was served. Parts this service cannot read (an image,
        audio, a file) are refused by name rather than dropped."""
        if not isinstance(content, list):
            return content
        types = (part.get("type") for part in content if isinstance(part, dict))
        # a type that is not a string (an object or an array, which no set can hold: a TypeError, so a
        # 500) is left to the validation below, which names the part
        kinds = {kind for kind in types if isinstance(kind, str)} - {"text"}
        if unsupported := sorted(str(kind) for kind in kinds):
            raise ValueError(
                f"content parts of type {', '.join(map(repr, unsupported))} are not supported: "
                "this service reads text only (parts of type 'text')"
            )
        try:
            parts = TEXT_PARTS.validate_python(content)
        except ValidationError as error:  # its own message spans lines and names the adapter's type
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"content part {where}: {first['msg']}") from None
        return "\n".join(part.text for part in parts)


class StreamOptions(BaseModel):
    """``include_usage``: send a last chunk with the token usage."""

    include_usage: Flag = False


class EvallensOptions(BaseModel):
    """evallens' own request options, under ``"evallens"`` in the body: ``{"retrieval": false}``
    answers without the knowledge base (no retrieval, no scope guard)."""

    model_config = ConfigDict(extra="forbid")

    retrieval: Flag | None = None


class ChatCompletionRequest(BaseModel):
    """``POST /v1/chat/completions`` body; OpenAI fields that change no answer (``user``, ``metadata``, ...)
    are accepted and ignored, those asking for what the service cannot do only with their defaults."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: Flag = False
    stream_options: StreamOptions | None = None
    max_tokens: Integer | None = Field(default=None, ge=1)
    max_completion_tokens: Integer | None = Field(default=None, ge=1)
    temperature: Number | None = Field(default=None, ge=0, le=2)
    top_p: Number | None = Field(default=None, gt=0, le=1)
    seed: Integer | None = Field(default=None, ge=SEED_MIN, le=SEED_MAX)
    stop: UnicodeText | list[UnicodeText] | None = None
    # vLLM's extensions, for tests and load generators that need answers of a known length
    min_tokens: Integer = Field(default=0, ge=0)
    ignore_eos: Flag = False
    evallens: EvallensOptions | None = None
    # OpenAI's fields this service cannot serve: accepted only with a value that asks for nothing
    n: Integer | None = None
    response_format: dict[str, Any] | None = None
    tools: list[Any] | None = None
    tool_choice: str | dict[str, Any] | None = None
    functions: list[Any] | None = None
    function_call: str | dict[str, Any] | None = None
    logprobs: Flag | None = None
    top_logprobs: Integer | None = None

    @field_validator(*NOT_SERVED)
    @classmethod
    def _asks_for_nothing_unserved(cls, value: Any, info: ValidationInfo) -> Any:
        """A request asking for what the service cannot do is a 400 naming the field, not an answer
        that silently lacks it."""
        asks_nothing, reason = NOT_SERVED[info.field_name or ""]
        if value not in asks_nothing:
            raise ValueError(f"not supported: {reason}")
        return value

    @field_validator("stop")
    @classmethod
    def _stop_sequences_have_text(cls, stop: str | list[str] | None) -> str | list[str] | None:
        """vLLM refuses an empty stop sequence only inside the engine, where it counted as the engine's
        failure (a 503, against its breaker): it is the request's fault, a 400 here. Too many stop
        sequences held the event loop, so every other request, while their answer was made."""
        if stop is not None and any(not sequence for sequence in ([stop] if isinstance(stop, str) else stop)):
            raise ValueError("a stop sequence must not be empty")
        if isinstance(stop, list) and len(stop) > MAX_STOP_SEQUENCES:
            raise ValueError(f"at most {MAX_STOP_SEQUENCES} stop sequences, got {len(stop)}")
        return stop

    @property
    def stop_sequences(self) -> tuple[str, ...]:
        """``stop`` as a tuple, whichever form it came in."""
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)


class Usage(BaseModel):
    """Token counts of one completion."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatChoice(BaseModel):
    """The answer of a non-streaming completion."""

    index: int = 0
    message: ChatMessage
    finish_reason: str | None


class CacheFlags(BaseModel):
    """Whether the answer came from the exact or the semantic answer cache."""

    exact: bool = False
    semantic: bool = False


class EvallensExtension(BaseModel):
    """evallens' own response fields: what retrieval cited, caches, degradation, route and trace.

    ``cited_ids`` are the chunk ids in the prompt (``<doc-id>#<n>``), best first; ``retrieved_ids`` the
    distinct document ids of those chunks in rank order (what recall@k scores).
    """

    cited_ids: list[str] = Field(default_factory=list)
    retrieved_ids: list[str] = Field(default_factory=list)
    cache: CacheFlags = Field(default_factory=CacheFlags)
    degraded: bool = False
    degraded_reason: str | None = None
    route: str | None = None
    trace_id: str | None = None
    config_fingerprint: str | None = None


class ChatCompletionResponse(BaseModel):
    """Non-streaming ``chat.completion``."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int = Field(default_factory=lambda: int(time.time()))
    model: str
    choices: list[ChatChoice]
    usage: Usage
    evallens: EvallensExtension = Field(default_factory=EvallensExtension)


class DeltaMessage(BaseModel):
    """The new piece of a streamed answer."""

    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    """One choice of a streamed chunk."""

    index: int = 0
    delta: DeltaMessage
    finish_reason: str | None = None


class ChatCompletionChunk(BaseModel):
    """Streaming ``chat.completion.chunk``; the usage chunk has no choices."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int = Field(default_factory=lambda: int(time.time()))
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None
    evallens: EvallensExtension | None = None
