"""What the routers get from the app through FastAPI dependencies."""

from typing import Annotated

from fastapi import Depends, Request

from evallens.service.engines.routing import EngineRouter
from evallens.service.serving import ChatServing
from evallens.service.telemetry import ServiceMetrics
from evallens.settings import ServiceSettings


def get_chat_serving(request: Request) -> ChatServing:
    """The app's chat serving."""
    serving: ChatServing = request.app.state.chat
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


ChatServingDep = Annotated[ChatServing, Depends(get_chat_serving)]
RouterDep = Annotated[EngineRouter, Depends(get_router)]
MetricsDep = Annotated[ServiceMetrics, Depends(get_metrics)]
SettingsDep = Annotated[ServiceSettings, Depends(get_settings)]
