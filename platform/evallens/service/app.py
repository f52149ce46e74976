"""The FastAPI app factory of the reference service: builds each API area's serving and wires them.

One folder per API area (``chat/``, ``feedback/``, ``documents/``, ``info/``; ``ops.py``), each with its
protocol, serving and router; engines, RAG, caches and guards are the parts they are built from.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator

from fastapi import Depends, FastAPI
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine as DatabaseEngine
from sqlalchemy.orm import Session, sessionmaker

from evallens.auth import AuthGate, KeyLookups
from evallens.db import create_db_engine, create_session_factory
from evallens.errors import EvallensError
from evallens.service import chat, feedback, info, ops
from evallens.service.body_limit import BodyLimit
from evallens.service.budgets import Admission
from evallens.service.caches import CacheMetrics
from evallens.service.dependencies import require_key
from evallens.service.documents import DocumentService, create_documents_router
from evallens.service.engines import Engine, EngineRouter, create_router
from evallens.service.errors import install_error_handlers
from evallens.service.guards import GuardMetrics
from evallens.service.head import answer_head_as_get
from evallens.service.openapi import customize_openapi
from evallens.service.rag import Embedder, HybridRetriever, KeywordIndex, KnowledgeBaseGenerations
from evallens.service.response_index import ResponseIndex
from evallens.service.telemetry import ServiceMetrics, create_tracer_provider
from evallens.settings import ServiceSettings

TRACER_NAME = "evallens.service"
# the threads that look keys up are the default executor's (5 on one core), which also embed questions
# and retrieve, and their connections the engine's pool of 5, which retrieval and documents share: keys
# being looked up never hold more than two of either
MAX_KEY_LOOKUPS_AT_ONCE = 2


class AuthNeedsDatabase(EvallensError):
    """Auth is enabled but no database holds the keys."""


def create_app(
    settings: ServiceSettings,
    engine: Engine | EngineRouter | None = None,
    tracer_provider: TracerProvider | None = None,
    registry: CollectorRegistry | None = None,
    embedder: Embedder | None = None,
) -> FastAPI:
    """The service around ``engine`` (started, or started here), or around the engines the settings name.

    Engines the app builds are started in the background on startup and shut down with it, the
    settings' small-route engine beside a main engine passed in too; an engine or router passed in
    belongs to the caller. The same holds for the tracer provider. ``/readyz`` turns 200 once the
    engines answer and the embedding model and the knowledge base's indexes are warm. With
    ``settings.database_url`` the knowledge base (``/v1/documents``, retrieval) and API keys live in
    that PostgreSQL; without one, chat answers without retrieval. ``embedder`` replaces the MiniLM
    embedder the app would build (tests count its calls).
    """
    router = engine if isinstance(engine, EngineRouter) else create_router(settings, engine)
    # closed with the app: the engines it made (the small one too, beside a main engine passed in)
    own_engines = [] if isinstance(engine, EngineRouter) else [e for e in router.engines if e is not engine]
    owns_tracing = tracer_provider is None
    provider = tracer_provider or create_tracer_provider(settings)
    tracer = provider.get_tracer(TRACER_NAME)
    metrics = ServiceMetrics(registry)
    database = _database(settings)
    sessions = None if database is None else create_session_factory(database)
    keyword_index = KeywordIndex()
    embedder = embedder or Embedder(settings)
    guard_metrics = GuardMetrics.create(metrics.registry)
    # one per app: the document service bumps a project's generation, the answer caches key by it
    generations = KnowledgeBaseGenerations()
    answers = chat.AnswerCache(
        settings, metrics=CacheMetrics.create(metrics.registry), tracer=tracer, generations=generations
    )
    preflight = chat.Preflight(
        settings,
        answers=answers,
        embedder=embedder,
        retriever=None if sessions is None else HybridRetriever(
            settings, embedder=embedder, session_factory=sessions, keyword_index=keyword_index, tracer=tracer
        ),
        tracer=tracer,
        guard_metrics=guard_metrics,
    )  # fmt: skip
    responses = ResponseIndex()
    serving = chat.ChatServing(
        settings,
        router,
        preflight=preflight,
        answers=answers,
        admission=Admission(settings.max_in_flight, settings.max_queued, settings.retry_after_s),
        metrics=metrics,
        guard_metrics=guard_metrics,
        tracer=tracer,
        responses=responses,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        starting = asyncio.create_task(readiness.warm_up())
        try:
            yield
        finally:
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
            for each in own_engines:
                await each.close()
            if owns_tracing:
                provider.shutdown()
            if database is not None:
                database.dispose()

    readiness = ops.Readiness(router, preflight.warm_up_steps())
    app = FastAPI(title="evallens reference service", lifespan=lifespan)
    app.state.readiness = readiness
    app.state.chat = serving
    app.state.feedback = feedback.FeedbackServing(tracer, responses)
    app.state.info = info.ServiceInfo(settings, router, preflight)
    app.state.engines = router
    app.state.metrics = metrics
    app.state.auth = _auth_gate(settings, sessions)
    app.state.key_lookups = KeyLookups(
        settings.service_key_attempts_per_minute, MAX_KEY_LOOKUPS_AT_ONCE, settings.retry_after_s
    )
    install_error_handlers(app, metrics.errors)
    customize_openapi(app)  # invalid requests are 400s (install_error_handlers), bodies on GET/DELETE too
    app.add_middleware(
        BodyLimit,
        max_body_bytes=settings.service_max_body_bytes,
        idle_timeout_s=settings.service_body_idle_timeout_s,
        body_timeout_s=settings.service_body_timeout_s,
        budget_bytes=settings.service_max_body_bytes_in_flight,
        retry_after_s=settings.retry_after_s,
        errors=metrics.errors,
    )
    for area in (chat, feedback, info, ops):
        app.include_router(area.router)
    if sessions is not None:
        documents = DocumentService(
            settings,
            embedder=embedder,
            session_factory=sessions,
            keyword_index=keyword_index,
            generations=generations,
            tracer=tracer,
        )
        app.include_router(create_documents_router(documents), dependencies=[Depends(require_key)])
    answer_head_as_get(app)  # after every router: each GET route answers HEAD too
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
