"""Chat completions: prompt, route, limits, generation and telemetry, for both response modes."""

import asyncio
import time
import uuid
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.trace import Tracer

from evallens.service._recording import CLIENT_CLOSED, RequestRecording, RequestTags
from evallens.service.config import answer_config, fingerprint
from evallens.service.engines.base import (
    Engine,
    EngineError,
    EngineRejected,
    GenerationChunk,
    Prompt,
    SamplingOptions,
)
from evallens.service.engines.routing import EngineRouter
from evallens.service.errors import BadRequest, ContextLengthExceeded, EngineUnavailable, ServiceError
from evallens.service.limits import Admission, Deadline, in_flight_slot
from evallens.service.prompt import BuiltPrompt, PromptContext, build_messages
from evallens.service.protocol import ChatCompletionRequest
from evallens.service.telemetry import ServiceMetrics
from evallens.settings import ServiceSettings
from evallens.telemetry import attributes as attr


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


class ChatServing:
    """Turns a chat request into engine chunks, enforcing the limits and recording telemetry."""

    def __init__(
        self,
        settings: ServiceSettings,
        router: EngineRouter,
        admission: Admission,
        metrics: ServiceMetrics,
        tracer: Tracer,
    ) -> None:
        self.settings = settings
        self.router = router
        self.admission = admission
        self.metrics = metrics
        self.tracer = tracer

    def prepare(self, request: ChatCompletionRequest, tags: RequestTags) -> ChatCall:
        """Open the request's span and check everything that can be refused before queueing."""
        request_id = f"chatcmpl-{uuid.uuid4().hex}"
        recording = RequestRecording.start(self.tracer, self.metrics, request_id, tags, stream=request.stream)
        try:
            return self._prepare(request, recording)
        except BaseException as error:
            self.fail(recording, error)
            raise

    def _prepare(self, request: ChatCompletionRequest, recording: RequestRecording) -> ChatCall:
        built = build_messages(request, PromptContext(system_prompt=self.settings.system_prompt))
        route = self.router.choose(built.num_chars)
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
        config_fingerprint = fingerprint(answer_config(self.settings, self.router))
        recording.set_request(
            route.engine.model_name, route.engine.provider, route.name, sampling, config_fingerprint
        )
        if not route.engine.is_ready():
            raise EngineUnavailable("the engine is not ready yet", code="engine_not_ready")
        try:
            prompt = route.engine.prepare(built.messages)
        except EngineRejected as error:
            raise BadRequest(str(error)) from error
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
        deadline = Deadline(
            self.settings.ttft_budget_s, self.settings.total_budget_s, started=recording.started
        )
        return ChatCall(
            request, recording, route.engine, built, prompt, sampling, deadline, config_fingerprint
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
            async with AsyncExitStack() as stack:
                queue_span = self.tracer.start_span("queue", context=parent)
                queued_at = time.perf_counter()
                self._update_gauges()
                try:
                    await stack.enter_async_context(in_flight_slot(self.admission, call.deadline))
                finally:
                    recording.span.set_attribute(attr.QUEUE_TIME_S, time.perf_counter() - queued_at)
                    queue_span.end()
                    self._update_gauges()
                stack.callback(self._update_gauges)
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
            if not finished:
                await call.engine.abort(recording.request_id)
            raise

    async def _generate(self, call: ChatCall) -> AsyncGenerator[GenerationChunk, None]:
        recording = call.recording
        chunks = call.engine.stream(recording.request_id, call.prompt, call.sampling)
        try:
            while True:
                first = recording.first_token_at is None
                budget_s = call.deadline.first_token_left_s() if first else call.deadline.total_left_s()
                try:
                    async with asyncio.timeout(max(budget_s, 0.0)):
                        chunk = await anext(chunks)
                except StopAsyncIteration:
                    return
                except TimeoutError as error:
                    raise (
                        call.deadline.first_token_error() if first else call.deadline.total_error()
                    ) from error
                except EngineRejected as error:
                    raise BadRequest(str(error)) from error
                except EngineError as error:
                    raise EngineUnavailable(str(error)) from error
                if chunk.text or chunk.num_output_tokens:
                    recording.mark_first_token()
                recording.num_prompt_tokens = chunk.num_prompt_tokens or recording.num_prompt_tokens
                recording.num_output_tokens = chunk.num_output_tokens
                recording.finish_reason = chunk.finish_reason or recording.finish_reason
                if chunk.engine_queue_s is not None:
                    recording.span.set_attribute(attr.ENGINE_QUEUE_TIME_S, chunk.engine_queue_s)
                yield chunk
        finally:
            await chunks.aclose()

    def finish(self, call: ChatCall, status: int) -> None:
        """Record a successful request."""
        call.recording.end(status, hour_usd=self.settings.hour_usd)

    def fail(self, recording: RequestRecording, error: BaseException) -> None:
        """Record a failed request with its status code and error kind."""
        if isinstance(error, ServiceError):
            status, kind = error.status_code, error.kind
        elif isinstance(error, asyncio.CancelledError | GeneratorExit):
            status, kind = CLIENT_CLOSED, "client_disconnected"
        else:
            status, kind = 500, type(error).__name__
        recording.end(status, kind, hour_usd=self.settings.hour_usd)

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
