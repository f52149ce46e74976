"""What every API area gets from the app through FastAPI dependencies: the API key's principal, the
request's tags and the metrics."""

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Annotated, Any

from fastapi import Depends, Request

from evallens.auth import (
    AuthError,
    AuthFailed,
    AuthGate,
    AuthUnavailable,
    KeyLookups,
    Principal,
    RateLimited,
    Scope,
)
from evallens.http_protocol import client_address
from evallens.service.errors import AuthRefused, BadRequest, InternalError
from evallens.service.tags import InvalidTag, RequestTags
from evallens.service.telemetry import ServiceMetrics


def app_state(name: str) -> Callable[[Request], Awaitable[Any]]:
    """A dependency that hands a route what the app factory put in ``app.state.<name>``. Async, as
    every dependency here that does not block: FastAPI runs a plain function in a worker thread, a
    thread hop per request for an attribute lookup."""

    async def resolve(request: Request) -> Any:
        return getattr(request.app.state, name)

    return resolve


async def require_key(request: Request) -> Principal | None:
    """With auth enabled: the API key's principal, or 401/403/429 (+ Retry-After), or 503 (+ Retry-After)
    when PostgreSQL cannot be asked now, or a 500 when it refused the lookup; None when auth is off.

    A key the gate knows is answered on the event loop; only an unknown key waits for a thread (and
    PostgreSQL), and only while its client address has refused attempts left and a lookup slot is free
    (``app.state.key_lookups``)."""
    gate: AuthGate = request.app.state.auth
    if not gate.enabled:
        return None
    lookups: KeyLookups = request.app.state.key_lookups
    try:
        principal = await lookups.admit(gate, request.headers, Scope.INGEST, client_address(request))
    except AuthFailed:
        raise InternalError() from None  # the gate logged why
    except (RateLimited, AuthUnavailable) as error:
        raise AuthRefused(str(error), error.status, error.retry_after_s) from None
    except AuthError as error:
        raise AuthRefused(str(error), error.status) from None
    return principal


PrincipalDep = Annotated[Principal | None, Depends(require_key)]


async def request_tags(request: Request, principal: PrincipalDep) -> RequestTags:
    """The ``x-evallens-*`` tags; with auth the tenant is the key's project, never the free header."""
    try:
        tags = RequestTags.from_headers(request.headers)
    except InvalidTag as error:
        raise BadRequest(str(error), param=error.header) from None
    return tags if principal is None else replace(tags, tenant=principal.project, project=principal.project)


MetricsDep = Annotated[ServiceMetrics, Depends(app_state("metrics"))]
TagsDep = Annotated[RequestTags, Depends(request_tags)]


async def knowledge_base_project(tags: TagsDep) -> str:
    """The project whose knowledge base a request reads and writes (``RequestTags.knowledge_base``)."""
    return tags.knowledge_base


ProjectDep = Annotated[str, Depends(knowledge_base_project)]
