"""The context-length check a chat request meets first, before any guard, cache or retrieval work, so
that no request decides how much the service tokenizes: its own messages must fit the context window."""

from dataclasses import dataclass

from evallens.service.chat.engine_errors import engine_refusal
from evallens.service.chat.prompt import PromptContext, build_messages
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.engines.base import Engine, EngineRejected, Message, Prompt, SamplingOptions
from evallens.service.engines.routing import EngineRouter
from evallens.service.errors import ContextLengthExceeded, MessagesTooLong, TooManyMessages

# No tokenizer of a chat model packs more characters into one token on average; messages longer than
# this many characters per token of the context window cannot fit, whatever they say.
MAX_CHARS_PER_TOKEN = 32


@dataclass(frozen=True)
class BarePrompt:
    """The request's own messages as one engine rendered them, before retrieval added anything."""

    messages: tuple[Message, ...]
    engine: Engine
    prompt: Prompt


def check_context(
    request: ChatCompletionRequest, sampling: SamplingOptions, router: EngineRouter, system_prompt: str
) -> BarePrompt | None:
    """Refuse a request whose own messages cannot fit the context window: by characters first (no
    tokenizing), then by tokens when the engine can count them. Returns the tokenized messages."""
    built = build_messages(request, PromptContext(system_prompt=system_prompt))
    engine = router.choose(built.num_chars).engine
    max_model_len = engine.max_model_len
    if max_model_len is None:
        return None
    if built.num_chars > max_model_len * MAX_CHARS_PER_TOKEN:
        raise MessagesTooLong(built.num_chars, max_model_len)
    if len(built.messages) > max_model_len:
        # empty messages pass the character check, and rendering and tokenizing 250,000 of them (8 MiB)
        # held the event loop, so every other request, for seconds
        raise TooManyMessages(len(built.messages), max_model_len)
    if not engine.is_ready():
        return None  # answered 503 later, unless a cache or guard answers without the engine
    try:
        prompt = engine.prepare(built.messages)
    except EngineRejected as error:
        raise engine_refusal(error, built.messages) from error
    if prompt.num_tokens is not None and prompt.num_tokens + sampling.max_tokens > max_model_len:
        raise ContextLengthExceeded(prompt.num_tokens, sampling.max_tokens, max_model_len)
    return BarePrompt(built.messages, engine, prompt)
