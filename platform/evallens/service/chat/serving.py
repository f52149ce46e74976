"""Chat completions: the context-length checks, the preflight, prompt, route, admission, the engine
behind its breaker (with the semantic cache as its fallback), time budgets and telemetry."""

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.trace import Tracer

from evallens.service.budgets import Admission, Deadline, in_flight_slot, within
from evallens.service.chat.answers import AnswerCache, CannedAnswer, Sources
from evallens.service.chat.context_length import check_context
from evallens.service.chat.engine_errors import engine_failure, engine_refusal
from evallens.service.chat.fingerprint import answer_config, fingerprint
from evallens.service.chat.preflight import Preflight, PreflightState, span_attributes
from evallens.service.chat.prompt import BuiltPrompt, PromptContext, build_messages
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.chat.recording import CLIENT_CLOSED, RequestRecording
from evallens.service.engines.base import (
    Engine,
    EngineError,
    EngineRejected,
    GenerationChunk,
    Prompt,
    SamplingOptions,
)
from evallens.service.engines.routing import EngineRouter
from evallens.service.errors import (
    BadRequest,
    ContextLengthExceeded,
    EngineUnavailable,
    InternalError,
    ServiceError,
    mark_counted,
)
from evallens.service.guards import CircuitBreaker, EngineGuard, GuardMetrics, ServiceUnavailable
from evallens.service.guards.degrade import ENGINE_FALLBACK_CACHE
from evallens.service.response_index import ResponseIndex
from evallens.service.tags import RequestTags
from evallens.service.telemetry import ServiceMetrics
from evallens.settings import ServiceSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry.messages import COMPLETE_FINISH_REASONS, EARLY_FINISH_REASONS


@dataclass
class ChatCall:
    """One request on its way through the service."""

    request: ChatCompletionRequest
    recording: RequestRecording
    engine: Engine
    built: BuiltPrompt
    prompt: Prompt
    sampling: SamplingOptions
    deadline: Deadline
    fingerprint: str
    preflight: PreflightState
    sources: Sources  # computed once, when the prompt is built; the fallback's when it stands in


class ChatServing:
    """Turns a chat request into engine chunks, enforcing the limits and recording telemetry."""

    def __init__(
        self,
        settings: ServiceSettings,
        router: EngineRouter,
        *,
        preflight: Preflight,
        answers: AnswerCache,
        admission: Admission,
        metrics: ServiceMetrics,
        guard_metrics: GuardMetrics,
        tracer: Tracer,
        responses: ResponseIndex,
    ) -> None:
        self.settings = settings
        self.router = router
        self.preflight = preflight
        self.answers = answers
        self.admission = admission
        self.metrics = metrics
        self.tracer = tracer
        self.responses = responses
        breaker = CircuitBreaker("engine", settings, metrics=guard_metrics)
        self.engine_guard = EngineGuard(breaker=breaker, metrics=guard_metrics)
        self._fingerprint: str | None = None

    def config_fingerprint(self) -> str:
        """The fingerprint of everything that changes answers (as ``/v1/config`` shows it); computed
        once, not per request (nothing in it changes while the service runs)."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint(
                answer_config(self.settings, self.router, self.preflight.config())
            )
        return self._fingerprint

    async def prepare(self, request: ChatCompletionRequest, tags: RequestTags) -> ChatCall:
        """Open the request's span, run the stages before the engine (guards, caches, retrieval) and
        check everything that can be refused before queueing."""
        request_id = f"chatcmpl-{uuid.uuid4().hex}"
        recording = RequestRecording.start(
            self.tracer,
            self.metrics,
            request_id,
            tags,
            stream=request.stream,
            capture_content=self.settings.capture_content,
        )
        self.responses.remember(request_id, recording.trace_id, tags.project)
        try:
            with _current(recording):
                return await self._prepare(request, recording, tags)
        except BaseException as error:
            self.fail(recording, error)
            raise

    async def _prepare(
        self, request: ChatCompletionRequest, recording: RequestRecording, tags: RequestTags
    ) -> ChatCall:
        recording.set_input([(message.role, message.content) for message in request.messages])
        sampling = SamplingOptions(
            max_tokens=request.max_tokens
            or request.max_completion_tokens
            or self.settings.default_max_tokens,
            temperature=self.settings.default_temperature
            if request.temperature is None
            else request.temperature,
            top_p=self.settings.default_top_p if request.top_p is None else request.top_p,
            seed=request.seed,
            stop=request.stop_sequences,
            min_tokens=request.min_tokens,
            ignore_eos=request.ignore_eos,
        )
        if sampling.min_tokens > sampling.max_tokens:
            # vLLM refuses it only inside the engine, where it counted as the engine's failure (a 503,
            # against its breaker): it is the request's fault
            raise BadRequest(
                f"min_tokens ({sampling.min_tokens}) must not be more than max_tokens "
                f"({sampling.max_tokens}, the service's default when the request gives none).",
                param="min_tokens",
            )
        bare = check_context(request, sampling, self.router, self.settings.system_prompt)  # before any work
        config_fingerprint = self.config_fingerprint()
        deadline = Deadline(
            self.settings.ttft_budget_s, self.settings.total_budget_s, started=recording.started
        )
        state = await self.preflight.run(
            request,
            sampling,
            tags.tenant,
            config_fingerprint,
            project=tags.knowledge_base,
            use_caches=not tags.no_cache,
            deadline=deadline,
        )
        recording.span.set_attributes(span_attributes(state))
        built = build_messages(request, self._prompt_context(state))
        sources = sources_of(state, built)
        route = self.router.choose(built.num_chars)
        recording.set_request(
            route.engine.model_name, route.engine.provider, route.name, sampling, config_fingerprint
        )
        if state.canned is not None:
            prompt = Prompt(built.messages)
            return ChatCall(
                request, recording, route.engine, built, prompt, sampling, deadline, config_fingerprint,
                state, sources,
            )  # fmt: skip
        if (died := route.engine.failure()) is not None:  # "not ready yet" would say to wait for it
            raise EngineUnavailable(died, code="engine_error")
        if not route.engine.is_ready():
            raise EngineUnavailable("the engine is not ready yet", code="engine_not_ready")
        try:
            same = bare is not None and bare.messages == built.messages and bare.engine is route.engine
            prompt = bare.prompt if same and bare is not None else route.engine.prepare(built.messages)
        except EngineRejected as error:
            raise engine_refusal(error, built.messages) from error
        recording.set_prompt([message.content for message in built.messages], prompt.num_tokens)
        max_model_len = route.engine.max_model_len
        num_tokens = prompt.num_tokens
        if (
            max_model_len is not None
            and num_tokens is not None
            and num_tokens + sampling.max_tokens > max_model_len
        ):
            raise ContextLengthExceeded(num_tokens, sampling.max_tokens, max_model_len)
        self.admission.check()
        return ChatCall(
            request, recording, route.engine, built, prompt, sampling, deadline, config_fingerprint,
            state, sources,
        )  # fmt: skip

    def _prompt_context(self, state: PreflightState) -> PromptContext:
        if not state.retrieval:
            return PromptContext(system_prompt=self.settings.system_prompt)
        chunks = None if state.result is None else state.result.chunks
        return PromptContext(
            system_prompt=self.settings.system_prompt, template=self.settings.prompt_template, chunks=chunks
        )

    async def run(self, call: ChatCall) -> AsyncGenerator[GenerationChunk, None]:
        """Queue for a slot, then stream the engine's chunks within the request's budgets.

        Ending early (an error, a timeout, a closed generator) aborts the engine request. Spans are
        started with an explicit parent, never made current: this generator may resume in another task.
        """
        recording = call.recording
        parent = trace.set_span_in_context(recording.span)
        finished = False
        try:
            if call.preflight.canned is not None:
                yield self._replay(call, call.preflight.canned)
                self.finish(call, 200)
                return
            async with AsyncExitStack() as stack:
                queue_span = self.tracer.start_span("queue", context=parent)
                queued_at = time.perf_counter()
                self._update_gauges()
                stack.callback(self._update_gauges)  # registered first so that it runs once the slot is back
                try:
                    await stack.enter_async_context(in_flight_slot(self.admission, call.deadline))
                finally:
                    recording.span.set_attribute(attr.QUEUE_TIME_S, time.perf_counter() - queued_at)
                    queue_span.end()
                    self._update_gauges()
                generation_span = self.tracer.start_span("generate", context=parent)
                stack.callback(generation_span.end)
                generation_span.set_attributes(
                    {
                        attr.GEN_AI_REQUEST_MODEL: call.engine.model_name,
                        attr.GEN_AI_PROVIDER_NAME: call.engine.provider,
                    }
                )
                recording.generation_started = time.perf_counter()
                recording.concurrency = max(1, self.admission.num_in_flight)
                async for chunk in self._generate(call):
                    finished = chunk.finish_reason is not None
                    yield chunk
            self.finish(call, 200)
        except BaseException as error:
            # Record first: in a cancelled task, any await below may be cancelled again.
            self.fail(recording, error)
            if not finished and recording.generation_started is not None:
                await call.engine.abort(recording.request_id)
            raise

    def _replay(self, call: ChatCall, answer: CannedAnswer) -> GenerationChunk:
        """An answer given without the engine, as one chunk (its recorded usage included)."""
        recording = call.recording
        recording.mark_first_token()
        recording.num_prompt_tokens = answer.num_prompt_tokens
        recording.num_output_tokens = answer.num_output_tokens
        recording.finish_reason = answer.finish_reason
        recording.answer_parts.append(answer.text)
        return GenerationChunk(
            answer.text, answer.num_prompt_tokens, answer.num_output_tokens, answer.finish_reason
        )

    async def _first_chunk(
        self, call: ChatCall, chunks: AsyncGenerator[GenerationChunk, None]
    ) -> GenerationChunk | CannedAnswer | None:
        """The engine's first chunk, behind the engine breaker; when the engine fails or misses its
        first-token budget, a semantic-cache stand-in (degraded), else the error: the engine's, saying what
        failed (a 503 ``engine_error``, a 502 for a reply its protocol does not allow), or the 504."""

        deadline = call.deadline
        rejected: list[EngineRejected] = []

        async def draw() -> GenerationChunk | None:
            try:
                return await within(
                    anext(chunks), deadline.first_token_left_s(), deadline.first_token_error()
                )
            except StopAsyncIteration:
                return None
            except EngineRejected as error:
                # An engine that answers "bad request" works: the breaker must not count the client's fault
                # (a server's 400 behind the openai engine) as the engine failing.
                rejected.append(error)
                return None
            except EngineError as error:
                raise engine_failure(error, call.prompt.messages) from error

        state = call.preflight

        async def stand_in() -> CannedAnswer | None:
            # Only a failed engine needs the question's meaning when nothing embedded it yet; within the
            # request's total budget (past it: its 504), or a stalled embedder holds the request for ever.
            if state.cache.embedding is None and state.question and self.answers.wants_fallback(state.cache):
                embedding = self.preflight.embed_question(state.question)
                state.cache.embedding = await within(
                    embedding, deadline.total_left_s(), deadline.total_error()
                )
            return self.answers.fallback(state.cache)

        try:
            with _current(call.recording):
                outcome = await self.engine_guard.generate(draw, fallback=stand_in)
        except ServiceUnavailable as error:
            cause = error.__cause__
            if isinstance(cause, ServiceError):
                # a missed budget stays a 504; an engine's error says what failed, which the guard's
                # generic words (for an open breaker, or an error no engine error names) cannot
                raise cause from cause.__cause__
            raise EngineUnavailable(str(error), code=error.reason) from error
        if rejected:
            raise rejected[0]
        if outcome.fallback is not None:
            state.degraded_reason, state.canned = ENGINE_FALLBACK_CACHE, outcome.fallback
            state.semantic_hit, call.sources = True, outcome.fallback.sources
            call.recording.span.set_attributes(span_attributes(state))
            return outcome.fallback
        return outcome.answer

    async def _generate(self, call: ChatCall) -> AsyncGenerator[GenerationChunk, None]:
        recording = call.recording
        chunks = call.engine.stream(recording.request_id, call.prompt, call.sampling)
        try:
            try:
                first = await self._first_chunk(call, chunks)
            except EngineRejected as error:
                raise engine_refusal(error, call.prompt.messages) from error
            if isinstance(first, CannedAnswer):
                await call.engine.abort(recording.request_id)
                yield self._replay(call, first)
                return
            chunk: GenerationChunk | None = first
            engine_queue_s: float | None = None
            while chunk is not None:
                if chunk.text or chunk.num_output_tokens:
                    recording.mark_first_token()
                    recording.engine_tokens = True
                recording.num_prompt_tokens = chunk.num_prompt_tokens or recording.num_prompt_tokens
                recording.num_output_tokens = chunk.num_output_tokens
                # a cut answer is no answer: retryable, as vLLM's own 500
                if chunk.finish_reason in EARLY_FINISH_REASONS:
                    raise EngineUnavailable(
                        f"The engine ended the answer early (finish reason '{chunk.finish_reason}'); "
                        "retry the request.",
                        code=f"engine_{chunk.finish_reason}",
                    )
                recording.finish_reason = chunk.finish_reason or recording.finish_reason
                if chunk.engine_queue_s is not None and engine_queue_s is None:  # once: it never changes
                    engine_queue_s = chunk.engine_queue_s
                    recording.span.set_attribute(attr.ENGINE_QUEUE_TIME_S, engine_queue_s)
                recording.answer_parts.append(chunk.text)
                yield chunk
                chunk = await self._next_chunk(call, chunks)
        finally:
            await chunks.aclose()

    async def _next_chunk(
        self, call: ChatCall, chunks: AsyncGenerator[GenerationChunk, None]
    ) -> GenerationChunk | None:
        """The next chunk within the first-token budget (until a token came) or the total budget."""
        deadline = call.deadline
        if call.recording.first_token_at is None:
            budget_s, missed = deadline.first_token_left_s(), deadline.first_token_error()
        else:
            budget_s, missed = deadline.total_left_s(), deadline.total_error()
        try:
            return await within(anext(chunks), budget_s, missed)
        except StopAsyncIteration:
            return None
        except EngineRejected as error:
            raise engine_refusal(error, call.prompt.messages) from error
        except EngineError as error:
            raise engine_failure(error, call.prompt.messages) from error

    def finish(self, call: ChatCall, status: int) -> None:
        """Record a successful request; remember a complete engine answer in the caches."""
        recording, state = call.recording, call.preflight
        if state.canned is None and not state.degraded and recording.finish_reason in COMPLETE_FINISH_REASONS:
            answer = CannedAnswer(
                recording.answer,
                recording.finish_reason,
                recording.num_prompt_tokens,
                recording.num_output_tokens,
                call.sources,
            )
            self.answers.remember(state.cache, answer)
        recording.end(status, hour_usd=self.settings.hour_usd)

    def fail(self, recording: RequestRecording, error: BaseException) -> None:
        """Record a failed request with its status code and error kind; a 500 is counted as ``internal``,
        as every other 500 is (the metric's kinds stay a bounded set), its span naming the error's class."""
        error_type = None
        if isinstance(error, ServiceError):
            status, kind = error.status_code, error.kind
        elif isinstance(error, asyncio.CancelledError | GeneratorExit):
            status, kind = CLIENT_CLOSED, "client_disconnected"
        else:
            status, kind, error_type = 500, InternalError.kind, type(error).__name__
        # counts it in the errors metric
        recording.end(status, kind, error_type=error_type, hour_usd=self.settings.hour_usd)
        mark_counted(error)  # the error handler answering it (a 500's too) must not count it again

    async def close(self, call: ChatCall) -> None:
        """After the response ended however it ended (a client gone mid-stream included): make sure the
        request is recorded and its engine request aborted. Runs outside any cancelled scope."""
        if not call.recording.ended:
            self.fail(call.recording, asyncio.CancelledError())
        if call.recording.finish_reason is None:
            await call.engine.abort(call.recording.request_id)

    def _update_gauges(self) -> None:
        self.metrics.in_flight.set(self.admission.num_in_flight)
        self.metrics.queued.set(self.admission.num_queued)


def _current(recording: RequestRecording) -> "contextlib.AbstractContextManager[object]":
    """Make the request span current (for the stages' child spans) without ending it or marking it."""
    return trace.use_span(
        recording.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
    )


def sources_of(state: PreflightState, built: BuiltPrompt) -> Sources:
    """What the answer will rest on: a cached answer's own sources, nothing for a guard's refusal or
    decline, else the chunks in the prompt and their distinct documents in rank order."""
    if state.canned is not None:
        return state.canned.sources if state.cache_hit else Sources()
    by_chunk = state.chunk_documents()
    documents = dict.fromkeys(by_chunk[chunk_id] for chunk_id in built.cited_ids if chunk_id in by_chunk)
    return Sources(built.cited_ids, tuple(documents))
