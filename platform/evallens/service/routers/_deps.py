"""What the routers get from the app through FastAPI dependencies."""

import asyncio
from dataclasses import replace
from typing import Annotated

from fastapi import Depends, Request

from evallens.auth import AuthError, AuthGate, Principal, RateLimited, Scope
from evallens.service._recording import RequestTags
from evallens.service.engines.routing import EngineRouter
from evallens.service.errors import AuthRefused
from evallens.service.feedback import FeedbackServing
from evallens.service.serving import ChatServing
from evallens.service.telemetry import ServiceMetrics
from evallens.settings import ServiceSettings


def get_chat_serving(request: Request) -> ChatServing:
    """The app's chat serving."""
    serving: ChatServing = request.app.state.chat
    return serving


def get_feedback_serving(request: Request) -> FeedbackServing:
    """The app's feedback serving."""
    serving: FeedbackServing = request.app.state.feedback
    return serving


def get_router(request: Request) -> EngineRouter:
    """The app's engine router."""
    router: EngineRouter = request.app.state.chat.router
    return router


def get_metrics(request: Request) -> ServiceMetrics:
    """The app's metrics."""
    metrics: ServiceMetrics = request.app.state.chat.metrics
    return metrics


def get_settings(request: Request) -> ServiceSettings:
    """The app's settings."""
    settings: ServiceSettings = request.app.state.chat.settings
    return settings


async def require_key(request: Request) -> Principal | None:
    """With auth enabled: the API key's principal, or 401/403/429 (+ Retry-After); None when auth is off."""
    gate: AuthGate = request.app.state.auth
    if not gate.enabled:
        return None
    try:
        principal = await asyncio.to_thread(gate.admit, request.headers, Scope.INGEST)
    except RateLimited as error:
        raise AuthRefused(str(error), error.status, error.retry_after_s) from None
    except AuthError as error:
        raise AuthRefused(str(error), error.status) from None
    return principal


PrincipalDep = Annotated[Principal | None, Depends(require_key)]


def request_tags(request: Request, principal: PrincipalDep) -> RequestTags:
    """The ``x-evallens-*`` tags; with auth the tenant is the key's project, never the free header."""
    tags = RequestTags.from_headers(request.headers)
    return tags if principal is None else replace(tags, tenant=principal.project)


ChatServingDep = Annotated[ChatServing, Depends(get_chat_serving)]
FeedbackServingDep = Annotated[FeedbackServing, Depends(get_feedback_serving)]
RouterDep = Annotated[EngineRouter, Depends(get_router)]
MetricsDep = Annotated[ServiceMetrics, Depends(get_metrics)]
SettingsDep = Annotated[ServiceSettings, Depends(get_settings)]
TagsDep = Annotated[RequestTags, Depends(request_tags)]
