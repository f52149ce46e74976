"""What a client is told when the engine fails or refuses its request: what failed, in the engine's own
words cut short, with its credentials and any text of the prompt masked (``engines.excerpts``). The
request's span keeps the engine's error as the cause of the one the client gets."""

from collections.abc import Sequence

from evallens.service.engines.base import (
    EngineError,
    EngineMalformedReply,
    EngineOverloaded,
    EngineRejected,
    Message,
)
from evallens.service.engines.excerpts import safe_excerpt
from evallens.service.errors import BadRequest, EngineBadReply, EngineUnavailable, ServiceError

__all__ = ["engine_failure", "engine_refusal"]

MAX_MESSAGE_CHARS = 600


def engine_failure(error: EngineError, messages: Sequence[Message]) -> ServiceError:
    """The engine's error as the client gets it: a reply its protocol does not allow is a 502
    ``engine_bad_reply``; an engine at capacity a 503 ``engine_overloaded`` (with its Retry-After, when it
    gave one); any other failure of the engine a 503 ``engine_error``, saying what failed."""
    message = _safe(error, messages)
    if isinstance(error, EngineMalformedReply):
        return EngineBadReply(message, code="engine_bad_reply")
    if isinstance(error, EngineOverloaded):
        retry_after = {} if error.retry_after_s is None else {"Retry-After": str(error.retry_after_s)}
        return EngineUnavailable(message, code="engine_overloaded", headers=retry_after)
    return EngineUnavailable(message, code="engine_error")


def engine_refusal(error: EngineRejected, messages: Sequence[Message]) -> BadRequest:
    """The engine refusing the request as invalid: a 400 in its words."""
    return BadRequest(_safe(error, messages))


def _safe(error: Exception, messages: Sequence[Message]) -> str:
    # every engine's words pass here, whether or not the engine masked what it quoted itself
    return safe_excerpt(str(error), [message.content for message in messages], MAX_MESSAGE_CHARS)
