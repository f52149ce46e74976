"""HEAD answered as GET without the body (RFC 9110 §9.3.2) on every GET route of the app.

Starlette's own routes add HEAD wherever GET is; FastAPI's do not (fastapi/fastapi#1773), so a health
checker or link checker that probes with HEAD was told 405 by ``/healthz``, ``/readyz`` and the rest.
"""

import copy

from fastapi import FastAPI
from fastapi.routing import APIRoute

__all__ = ["answer_head_as_get"]


def answer_head_as_get(app: FastAPI) -> None:
    """Give each GET route of ``app`` a HEAD twin: the same route (endpoint, dependencies, the API key's
    included) for HEAD alone, left out of the OpenAPI schema. Call it once every router is included.
    The server (uvicorn) sends a HEAD answer's status and headers, never its body."""
    for route in list(app.router.routes):
        if isinstance(route, APIRoute) and "GET" in route.methods and "HEAD" not in route.methods:
            # a twin, not HEAD added to the route's methods: FastAPI would document every method of it,
            # HEAD under the same operation id as GET
            head = copy.copy(route)
            head.methods = {"HEAD"}
            head.include_in_schema = False
            app.router.routes.append(head)
