"""The FastAPI app factory of the reference service."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from evallens.service.engines import Engine, EngineRouter, create_router
from evallens.service.errors import install_error_handlers
from evallens.service.limits import Admission
from evallens.service.routers import chat, models, ops
from evallens.service.serving import ChatServing
from evallens.service.telemetry import ServiceMetrics, create_tracer_provider
from evallens.settings import ServiceSettings

logger = logging.getLogger(__name__)
TRACER_NAME = "evallens.service"


def create_app(
    settings: ServiceSettings,
    engine: Engine | EngineRouter | None = None,
    tracer_provider: TracerProvider | None = None,
    registry: CollectorRegistry | None = None,
) -> FastAPI:
    """The service around ``engine`` (started, or started here), or around the engines the settings name.

    Engines the app builds are started in the background on startup (``/readyz`` says when they are
    ready) and shut down with it; an engine passed in belongs to the caller. The same holds for the
    tracer provider.
    """
    owns_engines = engine is None
    router = engine if isinstance(engine, EngineRouter) else create_router(settings, engine)
    owns_tracing = tracer_provider is None
    provider = tracer_provider or create_tracer_provider(settings)
    metrics = ServiceMetrics(registry)
    admission = Admission(settings.max_in_flight, settings.max_queued, settings.retry_after_s)
    serving = ChatServing(settings, router, admission, metrics, provider.get_tracer(TRACER_NAME))

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        starting = asyncio.create_task(_start_engines(router))
        try:
            yield
        finally:
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
            if owns_engines:
                for each in router.engines:
                    await each.close()
            if owns_tracing:
                provider.shutdown()

    app = FastAPI(title="evallens reference service", lifespan=lifespan)
    app.state.chat = serving
    install_error_handlers(app)
    for feature in (chat, models, ops):
        app.include_router(feature.router)
    return app


async def _start_engines(router: EngineRouter) -> None:
    """Start every engine; a failure is logged and leaves ``/readyz`` at 503."""
    for engine in router.engines:
        try:
            await engine.start()
        except Exception:
            logger.exception("engine %s failed to start", engine.model_name)
