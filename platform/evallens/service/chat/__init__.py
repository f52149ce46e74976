"""``POST /v1/chat/completions``: protocol, preflight (guards, answer caches, retrieval), prompt, serving
(the engine behind its breaker, budgets, telemetry), responses and router."""

from evallens.service.chat.answers import AnswerCache
from evallens.service.chat.preflight import Preflight
from evallens.service.chat.router import router
from evallens.service.chat.serving import ChatServing

__all__ = ["AnswerCache", "ChatServing", "Preflight", "router"]
