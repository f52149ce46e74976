"""Output tokens per second is on a request's span only when the engine generated them (issue 16: a
cache hit reported millions of tokens per second)."""

import time

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evallens.service.chat.recording import RequestRecording
from evallens.service.tags import RequestTags
from evallens.service.telemetry import ServiceMetrics
from evallens.telemetry import attributes as attr


def finished(engine_ran: bool) -> dict[str, object]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    recording = RequestRecording.start(
        provider.get_tracer("test"), ServiceMetrics(), "r1", RequestTags(), stream=False
    )
    if engine_ran:
        recording.generation_started = time.perf_counter()
        recording.engine_tokens = True
    recording.mark_first_token()
    time.sleep(0.01)
    recording.num_output_tokens = 40  # a cached answer's tokens, all at once; or the engine's
    recording.end(200)
    (span,) = exporter.get_finished_spans()
    return dict(span.attributes or {})


def test_a_cached_answer_reports_no_generation_rate() -> None:
    assert attr.OUTPUT_TOKENS_PER_SECOND not in finished(engine_ran=False)


def test_an_engine_answer_reports_its_rate() -> None:
    rate = finished(engine_ran=True)[attr.OUTPUT_TOKENS_PER_SECOND]
    assert isinstance(rate, float) and 0 < rate < 39 / 0.01
