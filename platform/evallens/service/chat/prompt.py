"""The one place a request becomes the messages the model sees.

Without retrieval: the configured system prompt (unless the request brings its own) and, when given,
``passages`` as numbered context. With retrieval (``template`` set): the versioned RAG template with the
retrieved chunks, or its no-context variant when retrieval degraded (``chunks`` None).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.engines.base import Message
from evallens.service.rag.prompt import system_message
from evallens.service.rag.types import RetrievedChunk


@dataclass(frozen=True)
class Passage:
    """A retrieved piece of the knowledge base that the answer may use."""

    id: str
    text: str


@dataclass(frozen=True)
class PromptContext:
    """What besides the request shapes the prompt: the system prompt and retrieved passages."""

    system_prompt: str
    passages: Sequence[Passage] = ()
    template: str | None = None
    chunks: Sequence[RetrievedChunk] | None = None


@dataclass(frozen=True)
class BuiltPrompt:
    """The messages for the engine and the ids of the passages they include."""

    messages: tuple[Message, ...]
    cited_ids: tuple[str, ...] = field(default=())

    @property
    def num_chars(self) -> int:
        """Characters of all message contents (what routing and logs measure)."""
        return sum(len(message.content) for message in self.messages)


def build_messages(request: ChatCompletionRequest, context: PromptContext) -> BuiltPrompt:
    """The request's messages, with the system prompt first (unless the request brings its own)
    and the passages appended to it as numbered context; or the RAG template's messages."""
    if context.template is not None:
        return _rag_messages(request, context.template, context.chunks)
    turns = [Message(message.role, message.content) for message in request.messages]
    system_parts = [] if turns[0].role == "system" else [context.system_prompt]
    if context.passages:
        listed = "\n".join(f"[{passage.id}] {passage.text}" for passage in context.passages)
        system_parts.append(f"Answer from this context and cite the ids you use:\n{listed}")
    if system_parts:
        if turns[0].role == "system":
            turns[0] = Message("system", "\n\n".join([turns[0].content, *system_parts]))
        else:
            turns.insert(0, Message("system", "\n\n".join(system_parts)))
    return BuiltPrompt(tuple(turns), tuple(passage.id for passage in context.passages))


def _rag_messages(
    request: ChatCompletionRequest, template: str, chunks: Sequence[RetrievedChunk] | None
) -> BuiltPrompt:
    """The template's system message first, then the conversation as sent (a caller's own system
    messages come after it, so the template's grounding rules come first)."""
    system = Message("system", system_message(chunks, version=template))
    turns = (Message(message.role, message.content) for message in request.messages)
    return BuiltPrompt((system, *turns), tuple(chunk.id for chunk in chunks or ()))
