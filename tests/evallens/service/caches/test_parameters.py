"""The answer caches serve an answer only to a request whose parameters would give that same answer.

The real embedder, the real preflight and answer caches; no engine (an answer is stored as the chat
serving stores a complete engine answer).
"""

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from evallens.service.caches import CacheMetrics
from evallens.service.chat.answers import AnswerCache, CannedAnswer
from evallens.service.chat.preflight import Preflight, PreflightState
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.engines import SamplingOptions
from evallens.service.guards import GuardMetrics
from evallens.service.rag.generations import KnowledgeBaseGenerations
from evallens.settings import ServiceSettings
from evallens.telemetry.attributes import DEFAULT_PROJECT
from tests.evallens.service.conftest import RecordingEmbedder

QUESTION = "How long do card refunds take?"
CLOSE = "How long do card refunds take"  # cosine >= 0.95 to QUESTION with the packaged embedder
BASE: dict[str, Any] = {
    "messages": [{"role": "user", "content": QUESTION}], "max_tokens": 4, "temperature": 0,
}  # fmt: skip
SYSTEM = {"role": "system", "content": "Answer in French."}


@pytest.fixture
def preflight(embedder: RecordingEmbedder, tracer_provider: TracerProvider) -> Preflight:
    settings = ServiceSettings(cache_exact_enabled=True, cache_semantic_enabled=True, retrieval_enabled=False)
    tracer = tracer_provider.get_tracer("test")
    answers = AnswerCache(
        settings, metrics=CacheMetrics.create(), tracer=tracer, generations=KnowledgeBaseGenerations()
    )
    return Preflight(
        settings, answers=answers, embedder=embedder, retriever=None, tracer=tracer,
        guard_metrics=GuardMetrics.create(),
    )  # fmt: skip


def run(preflight: Preflight, body: dict[str, Any]) -> PreflightState:
    request = ChatCompletionRequest(**body)
    settings = preflight.settings
    sampling = SamplingOptions(
        max_tokens=request.max_tokens or settings.default_max_tokens,
        temperature=settings.default_temperature if request.temperature is None else request.temperature,
        top_p=settings.default_top_p if request.top_p is None else request.top_p,
        seed=request.seed,
        stop=request.stop_sequences,
    )
    return asyncio.run(preflight.run(request, sampling, "acme", "fingerprint", project=DEFAULT_PROJECT))


def asked(question: str, **changes: Any) -> dict[str, Any]:
    return {**BASE, "messages": [{"role": "user", "content": question}], **changes}


@pytest.mark.parametrize(
    "changes",
    [
        {"max_tokens": 200},
        {"max_completion_tokens": 200, "max_tokens": None},
        {"model": "another-model"},
        {"temperature": 0.8, "seed": 7},
        {"top_p": 0.5},
        {"stop": ["."]},
        {"messages": [SYSTEM, {"role": "user", "content": CLOSE}]},
    ],
    ids=["max_tokens", "max_completion_tokens", "model", "sampling", "top_p", "stop", "system_prompt"],
)
def test_a_semantic_hit_needs_the_parameters_the_answer_was_made_with(
    preflight: Preflight, changes: dict[str, Any]
) -> None:
    """The semantic cache compared only the question's meaning (per tenant and knowledge base): a request
    asking for 200 tokens got the 4-token answer cut at its length, one with its own system prompt or
    model or sampling got the answer made without them, each marked as a plain cache hit."""
    stored = run(preflight, asked(QUESTION))
    assert stored.canned is None and stored.cache.embedding is not None
    preflight.answers.remember(stored.cache, CannedAnswer("Refunds take", "length", 12, 4))

    same = run(preflight, asked(CLOSE))
    assert same.semantic_hit and same.canned is not None and same.canned.text == "Refunds take"

    changed = run(preflight, asked(CLOSE, **changes))
    assert changed.cache.embedding is not None  # it was looked up by meaning ...
    assert not changed.semantic_hit and changed.canned is None  # ... and found nothing made for it
