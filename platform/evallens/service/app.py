"""The FastAPI app factory of the reference service."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import Depends, FastAPI
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine as DatabaseEngine
from sqlalchemy.orm import Session, sessionmaker

from evallens.auth import AuthGate
from evallens.db import create_db_engine, create_session_factory
from evallens.errors import EvallensError
from evallens.service.documents import DocumentService, create_documents_router
from evallens.service.engines import Engine, EngineRouter, create_router
from evallens.service.errors import install_error_handlers
from evallens.service.feedback import FeedbackServing
from evallens.service.limits import Admission
from evallens.service.rag import KeywordIndex
from evallens.service.rag_pipeline import RagPipeline, create_rag_pipeline
from evallens.service.routers import chat, feedback, models, ops
from evallens.service.routers._deps import require_key
from evallens.service.serving import ChatServing
from evallens.service.telemetry import ServiceMetrics, create_tracer_provider
from evallens.settings import ServiceSettings

logger = logging.getLogger(__name__)
TRACER_NAME = "evallens.service"


class AuthNeedsDatabase(EvallensError):
    """Auth is enabled but no database holds the keys."""


def create_app(
    settings: ServiceSettings,
    engine: Engine | EngineRouter | None = None,
    tracer_provider: TracerProvider | None = None,
    registry: CollectorRegistry | None = None,
) -> FastAPI:
    """The service around ``engine`` (started, or started here), or around the engines the settings name.

    Engines the app builds are started in the background on startup (``/readyz`` says when they are
    ready) and shut down with it; an engine passed in belongs to the caller. The same holds for the
    tracer provider. With ``settings.database_url`` the knowledge base (``/v1/documents``, retrieval)
    and API keys live in that PostgreSQL; without one, chat answers without retrieval.
    """
    owns_engines = engine is None
    router = engine if isinstance(engine, EngineRouter) else create_router(settings, engine)
    owns_tracing = tracer_provider is None
    provider = tracer_provider or create_tracer_provider(settings)
    tracer = provider.get_tracer(TRACER_NAME)
    metrics = ServiceMetrics(registry)
    database = _database(settings)
    sessions = None if database is None else create_session_factory(database)
    keyword_index = KeywordIndex()
    rag, embedder = create_rag_pipeline(
        settings, sessions, tracer=tracer, keyword_index=keyword_index, registry=metrics.registry
    )
    admission = Admission(settings.max_in_flight, settings.max_queued, settings.retry_after_s)
    serving = ChatServing(settings, router, admission, metrics, tracer, rag)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        starting = asyncio.create_task(_start(router, rag))
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
            if database is not None:
                database.dispose()

    app = FastAPI(title="evallens reference service", lifespan=lifespan)
    app.state.chat = serving
    app.state.feedback = FeedbackServing(tracer, serving.responses)
    app.state.auth = _auth_gate(settings, sessions)
    install_error_handlers(app)
    for feature in (chat, feedback, models, ops):
        app.include_router(feature.router)
    if sessions is not None:
        documents = DocumentService(
            settings, embedder=embedder, session_factory=sessions, keyword_index=keyword_index, tracer=tracer
        )
        app.include_router(create_documents_router(documents), dependencies=[Depends(require_key)])
    return app


def _database(settings: ServiceSettings) -> DatabaseEngine | None:
    if not settings.database_url:
        return None
    return create_db_engine(settings.database_url, connect_timeout_s=settings.database_connect_timeout_s)


def _auth_gate(settings: ServiceSettings, sessions: sessionmaker[Session] | None) -> AuthGate:
    if sessions is None:
        if settings.auth_enabled:
            raise AuthNeedsDatabase("auth is enabled but there is no database: set EVALLENS_DATABASE_URL")

        def no_database() -> Session:
            raise AuthNeedsDatabase("no database")

        return AuthGate(settings, no_database)
    return AuthGate(settings, sessions)


async def _start(router: EngineRouter, rag: RagPipeline) -> None:
    """Start every engine and warm the embedding model; a failure is logged and leaves ``/readyz`` at 503."""
    for engine in router.engines:
        try:
            await engine.start()
        except Exception:
            logger.exception("engine %s failed to start", engine.model_name)
    try:
        await rag.warm_up()
    except Exception:
        logger.exception("the embedding model failed to load; retrieval answers degraded")
