"""What the OpenAPI schema says the service answers: each route lists its error statuses as
``ErrorResponse`` bodies with ``error_responses``, and ``customize_openapi`` takes out the 422 FastAPI
documents for invalid requests, which the service answers with a 400 (``errors.install_error_handlers``),
and documents the 400 every GET and DELETE answers when sent with a body (``body_limit.BodyLimit``)."""

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI

from evallens.service.errors import BODYLESS_METHODS, ErrorResponse

__all__ = ["BODY_ERRORS", "ERROR_DESCRIPTIONS", "KEY_ERRORS", "customize_openapi", "error_responses"]

ERROR_DESCRIPTIONS = {
    400: "The request cannot be served as sent: a body that is not a JSON object of the documented "
    "fields, or a field, parameter or x-evallens-* header out of range (`param` names it).",
    401: "No API key, or one the service does not know (auth enabled).",
    403: "A revoked API key, or one without the ingest scope (auth enabled).",
    404: "The request names something the service does not know.",
    408: "The request body stalled, or was not all in in time (EVALLENS_SERVICE_BODY_IDLE_TIMEOUT_S, "
    "EVALLENS_SERVICE_BODY_TIMEOUT_S).",
    413: "The request body is over EVALLENS_SERVICE_MAX_BODY_BYTES.",
    415: "The request body has a Content-Encoding other than identity: the service decodes none.",
    429: "Too many at once: the service is at capacity (chat), the request body bytes in flight are at "
    "EVALLENS_SERVICE_MAX_BODY_BYTES_IN_FLIGHT, or the API key or client address is over its rate "
    "limit. Retry after Retry-After seconds.",
    500: "An error the service did not expect (PostgreSQL refusing a command, a bug): the error object says "
    "only that, the service's log holds the rest.",
    502: "The engine answered something that is no reply its protocol allows (`engine_bad_reply`): the "
    "engine's fault, not the request's.",
    503: "Not now: the engine is not ready (`engine_not_ready`), failed (`engine_error`, saying what failed; "
    "`engine_breaker_open` while its breaker is open) or is at capacity (`engine_overloaded`, with "
    "Retry-After when the engine's server gave one) (chat); or PostgreSQL cannot be reached, dropped the "
    "connection or did not answer in time, so the API key cannot be checked (auth enabled) or the "
    "knowledge base read or written (documents); those two come with Retry-After.",
    504: "The request missed its time budget (to first token, or in all).",
}
# what a GET, HEAD or DELETE sent with a body is answered, whatever the route
BODY_NOT_ALLOWED = "A GET, HEAD or DELETE request sent with a body: these take none."
# what every route that reads a JSON body may answer (429: the body bytes all requests may hold are taken)
BODY_ERRORS = (400, 408, 413, 415, 429)
# what every route behind the API key and the x-evallens-* tags may answer
KEY_ERRORS = (400, 401, 403, 429, 503)


def error_responses(
    *status_codes: int, descriptions: Mapping[int, str] | None = None
) -> dict[int | str, dict[str, Any]]:
    """FastAPI ``responses`` documenting ``status_codes`` as ``ErrorResponse`` bodies, each described by
    the route's own ``descriptions`` or else by what it means on any route."""
    own = descriptions or {}
    return {
        code: {"model": ErrorResponse, "description": own.get(code, ERROR_DESCRIPTIONS[code])}
        for code in sorted(set(status_codes))
    }


def customize_openapi(app: FastAPI) -> None:
    """Make ``app.openapi()`` FastAPI's schema without the 422 it documents on every route that takes
    parameters or a body, and without that 422's schemas: the service answers those with a 400; and with
    the 400 every GET and DELETE operation answers when sent with a body. Replacing ``app.openapi`` is
    FastAPI's documented way to change the schema it generates."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            for operations in schema["paths"].values():
                for method, operation in operations.items():
                    operation["responses"].pop("422", None)
                    if method.upper() in BODYLESS_METHODS:
                        document_body_not_allowed(operation["responses"])
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def document_body_not_allowed(responses: dict[str, Any]) -> None:
    """Add the 400 of a body sent where none is taken to an operation's ``responses``: the description of
    the 400 it documents already, or a 400 of its own."""
    if "400" in responses:
        responses["400"]["description"] += f" {BODY_NOT_ALLOWED}"
        return
    error_body = {"$ref": f"#/components/schemas/{ErrorResponse.__name__}"}
    responses["400"] = {
        "description": BODY_NOT_ALLOWED,
        "content": {"application/json": {"schema": error_body}},
    }
