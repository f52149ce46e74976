"""Errors the API returns, each with its HTTP status, OpenAI error type and metric kind."""

import sys
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from prometheus_client import Counter
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.routing import Match


class ErrorDetail(BaseModel):
    """The ``error`` object of an OpenAI-style error body."""

    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorResponse(BaseModel):
    """OpenAI-style error body."""

    error: ErrorDetail


class ServiceError(Exception):
    """A request that ends in an OpenAI-style error body."""

    status_code = 500
    error_type = "server_error"
    kind = "engine"  # label of the errors metric
    counted = False  # True once the errors metric counts it (``count_error``, ``mark_counted``)

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.headers = headers or {}
        self.param = param  # the request field at fault, when one is

    def response(self) -> JSONResponse:
        """The error as a JSON response."""
        detail = ErrorDetail(message=self.message, type=self.error_type, param=self.param, code=self.code)
        body = ErrorResponse(error=detail)
        return JSONResponse(body.model_dump(), status_code=self.status_code, headers=self.headers)


class BadRequest(ServiceError):
    """The request cannot be served as sent."""

    status_code = 400
    error_type = "invalid_request_error"
    kind = "invalid_request"


class ContextLengthExceeded(BadRequest):
    """Prompt plus ``max_tokens`` do not fit the model's context window."""

    kind = "context_length"

    def __init__(self, num_prompt_tokens: int, max_tokens: int, max_model_len: int) -> None:
        super().__init__(
            f"This model's maximum context length is {max_model_len} tokens. However, you requested "
            f"{num_prompt_tokens + max_tokens} tokens ({num_prompt_tokens} in the messages, "
            f"{max_tokens} in the completion). Please reduce the length of the messages or completion.",
            code="context_length_exceeded",
        )
        self.num_prompt_tokens = num_prompt_tokens
        self.max_tokens = max_tokens
        self.max_model_len = max_model_len


class MessagesTooLong(ContextLengthExceeded):
    """The messages hold more characters than the context window could hold as tokens (refused before
    tokenizing them, so no request decides how much the service tokenizes)."""

    def __init__(self, num_chars: int, max_model_len: int) -> None:
        BadRequest.__init__(
            self,
            f"This model's maximum context length is {max_model_len} tokens. However, your messages hold "
            f"{num_chars} characters, more than that many tokens can hold. Please reduce the length of "
            "the messages.",
            code="context_length_exceeded",
        )
        self.num_prompt_tokens = 0
        self.max_tokens = 0
        self.max_model_len = max_model_len


class TooManyMessages(ContextLengthExceeded):
    """More messages than the context window has tokens: each takes at least one (its role's markup),
    so they cannot fit whatever they say (refused before the chat template renders them all)."""

    def __init__(self, num_messages: int, max_model_len: int) -> None:
        BadRequest.__init__(
            self,
            f"This model's maximum context length is {max_model_len} tokens. However, your request holds "
            f"{num_messages} messages, and each takes at least one token. Please send fewer messages.",
            code="context_length_exceeded",
        )
        self.num_prompt_tokens = 0
        self.max_tokens = 0
        self.max_model_len = max_model_len


class Overloaded(ServiceError):
    """Every in-flight slot is taken and the queue is full."""

    status_code = 429
    error_type = "rate_limit_error"
    kind = "overload"

    def __init__(self, retry_after_s: int, num_in_flight: int, num_queued: int) -> None:
        super().__init__(
            f"The service is at capacity ({num_in_flight} requests in flight, {num_queued} queued). "
            f"Retry after {retry_after_s} s.",
            code="overloaded",
            headers={"Retry-After": str(retry_after_s)},
        )


class BudgetExceeded(ServiceError):
    """A time budget was missed: the request's time-to-first-token or total budget (its engine request
    is aborted), or a stage's own budget (retrieval, which degrades instead of failing)."""

    status_code = 504
    error_type = "timeout_error"
    kind = "timeout"

    def __init__(self, budget: str, budget_s: float) -> None:
        super().__init__(
            f"The request exceeded its {budget} budget of {budget_s:g} s.", code=f"{budget}_timeout"
        )
        self.budget = budget


class BodyTooLarge(ServiceError):
    """The request body is over the service's limit (by its Content-Length, or as its bytes arrived)."""

    status_code = 413
    error_type = "invalid_request_error"
    kind = "body_too_large"

    def __init__(self, max_body_bytes: int) -> None:
        super().__init__(
            f"The request body is over the service's limit of {max_body_bytes} bytes "
            "(EVALLENS_SERVICE_MAX_BODY_BYTES). Send less: split documents, shorten the messages.",
            code="body_too_large",
            headers={"Connection": "close"},  # the rest of the body is never read
        )


class BodyStalled(ServiceError):
    """The client stopped sending its request body part way."""

    status_code = 408
    error_type = "timeout_error"
    kind = "body_timeout"  # not "timeout": a client's pause, not the service's time budget

    def __init__(self, idle_timeout_s: float, num_bytes: int) -> None:
        super().__init__(
            f"The request body stalled: no bytes for {idle_timeout_s:g} s after {num_bytes} bytes "
            "(EVALLENS_SERVICE_BODY_IDLE_TIMEOUT_S).",
            code="body_timeout",
            headers={"Connection": "close"},
        )


class BodyTooSlow(BodyStalled):
    """The client's request body was not all in within the service's time for a whole body."""

    def __init__(self, body_timeout_s: float, num_bytes: int) -> None:
        ServiceError.__init__(
            self,
            f"The request body was not all in after {body_timeout_s:g} s ({num_bytes} bytes came; "
            "EVALLENS_SERVICE_BODY_TIMEOUT_S).",
            code="body_timeout",
            headers={"Connection": "close"},
        )


class BodyBudgetFull(ServiceError):
    """The request's body would take the bytes all requests may hold together past the service's budget."""

    status_code = 429
    error_type = "rate_limit_error"
    kind = "body_bytes_in_flight"

    def __init__(self, budget_bytes: int, retry_after_s: int) -> None:
        super().__init__(
            f"The service holds as many request body bytes as it may ({budget_bytes} in all, "
            f"EVALLENS_SERVICE_MAX_BODY_BYTES_IN_FLIGHT). Retry after {retry_after_s} s.",
            code="body_bytes_in_flight",
            headers={"Retry-After": str(retry_after_s), "Connection": "close"},  # the body is never read
        )


class UnsupportedContentEncoding(ServiceError):
    """The request body is sent with a content coding (``Content-Encoding``) the service does not decode
    (RFC 9110 §15.5.16, RFC 7694: a 415 with ``Accept-Encoding``)."""

    status_code = 415
    error_type = "invalid_request_error"
    kind = "content_encoding"

    def __init__(self, coding: str) -> None:
        super().__init__(
            f"The request body is sent with Content-Encoding {coding!r}, which the service does not "
            "decode. Send it unencoded (no Content-Encoding, or identity).",
            code="unsupported_content_encoding",
            headers={"Accept-Encoding": "identity", "Connection": "close"},  # the body is never read
        )


# methods none of the service's routes reads a body for: a request of one sent with a body is refused
BODYLESS_METHODS = frozenset({"GET", "HEAD", "DELETE"})


class BodyNotAllowed(BadRequest):
    """A GET, HEAD or DELETE sent with a body, which no route of those methods reads: refused before a byte
    of it is read, whatever its size or coding (RFC 9110 §9.3.1: such content has no meaning, and may be
    refused; unread, it would be left on a connection the next request shares)."""

    def __init__(self, method: str) -> None:
        super().__init__(
            f"A {method} request takes no body: send it without one (no Transfer-Encoding, no "
            "Content-Length above 0).",
            code="body_not_allowed",
            headers={"Connection": "close"},  # the body is never read
        )


class EngineUnavailable(ServiceError):
    """The engine is not ready or failed."""

    status_code = 503
    error_type = "server_error"
    kind = "engine"


class EngineBadReply(ServiceError):
    """The engine answered something that is not a reply its protocol allows (a 502: the gateway's
    upstream is at fault, not the request)."""

    status_code = 502
    error_type = "server_error"
    kind = "engine_reply"


class DatabaseAway(ServiceError):
    """PostgreSQL, which holds what the request reads or writes, cannot be reached, dropped the connection
    or did not answer in time (``evallens.db.errors.database_unavailable``): retry after ``retry_after_s``
    (any other database error is a 500)."""

    status_code = 503
    error_type = "server_error"
    kind = "database"

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(
            "The service's PostgreSQL cannot be reached now, dropped the connection or did not answer in "
            f"time. Retry after {retry_after_s} s.",
            code="database_unavailable",
            headers={"Retry-After": str(retry_after_s)},
        )


class NotFound(ServiceError):
    """The request names something the service does not know."""

    status_code = 404
    error_type = "not_found_error"
    kind = "not_found"


class InternalError(ServiceError):
    """An error the service did not expect (PostgreSQL refusing a command, a bug): answered as an error
    object, its traceback only in the service's log."""

    status_code = 500
    error_type = "server_error"
    kind = "internal"

    def __init__(self) -> None:
        super().__init__(
            "The service failed to answer this request: an internal error, logged by the service.",
            code="internal_error",
        )


AUTH_ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
    503: "server_error",
}


class AuthRefused(ServiceError):
    """No key, a wrong, revoked or under-scoped key, a key over its rate limit or a client address over
    its refused keys (401/403/429), or a key that cannot be checked now (503)."""

    kind = "auth"

    def __init__(self, message: str, status_code: int, retry_after_s: int | None = None) -> None:
        headers = {"Retry-After": str(retry_after_s)} if retry_after_s is not None else None
        super().__init__(message, code=f"auth_{status_code}", headers=headers)
        self.status_code = status_code
        self.error_type = AUTH_ERROR_TYPES.get(status_code, "authentication_error")
        if status_code == 401:
            self.headers["WWW-Authenticate"] = "Bearer"


def install_error_handlers(app: FastAPI, errors: Counter) -> None:
    """Turn service errors and invalid bodies into OpenAI-style JSON errors, each counted in ``errors``
    (the errors metric, by kind) unless the request's own recording counted it already; any other
    exception is a 500 with an error object too, counted as ``internal`` on the same terms."""

    async def service_error(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, ServiceError)
        count_error(errors, error)
        return error.response()

    async def invalid_body(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        first = error.errors()[0] if error.errors() else {}
        loc = tuple(first.get("loc", ()))
        param = (
            None if first.get("type") == "json_invalid" else ".".join(str(part) for part in loc[1:]) or None
        )
        message = f"{param}: {first.get('msg', 'invalid request')}" if param else whole_body_message(first)
        body = ErrorResponse(error=ErrorDetail(message=message, type="invalid_request_error", param=param))
        errors.labels(BadRequest.kind).inc()
        return JSONResponse(body.model_dump(), status_code=400)

    async def http_error(request: Request, error: Exception) -> JSONResponse:
        # Starlette's own refusals (an unknown path or method, a body FastAPI cannot parse) answered
        # {"detail": ...}, not the error object OpenAI clients read
        assert isinstance(error, HTTPException)
        if isinstance(error.__cause__, ServiceError):  # the body limit refused the body FastAPI read
            return await service_error(request, error.__cause__)
        message = unreadable_body_message(error.__cause__) or str(error.detail)
        error_type = "server_error" if error.status_code >= 500 else "invalid_request_error"
        if error.status_code == 404:
            error_type = NotFound.error_type
        if error.status_code == 400:
            errors.labels(BadRequest.kind).inc()
        headers = error.headers
        if error.status_code == 405:  # Starlette's Allow names only the first route's methods
            headers = {**(headers or {}), "Allow": allowed_methods(request)}
        body = ErrorResponse(error=ErrorDetail(message=message, type=error_type))
        return JSONResponse(body.model_dump(), status_code=error.status_code, headers=headers)

    async def unexpected_error(_: Request, error: Exception) -> JSONResponse:
        # Starlette answered a text body, "Internal Server Error". Its ServerErrorMiddleware, which calls
        # this, raises the error on to the server once this answer is sent: uvicorn logs its traceback
        # and, the response begun, closes the connection. Connection: close says so, where a client
        # that reused the connection had its next request reset. (An InternalError raised as such, a key
        # lookup PostgreSQL refused, is answered by ``service_error`` and raised no further: that
        # connection stays open.) Called for an error raised after the response started too (a stream
        # cut short), whose answer is never sent: counted all the same, as it is a 500.
        count_error(errors, error, InternalError.kind)  # chat's own are counted already, as internal
        response = InternalError().response()
        response.headers["Connection"] = "close"
        return response

    app.add_exception_handler(ServiceError, service_error)
    app.add_exception_handler(RequestValidationError, invalid_body)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, unexpected_error)


def allowed_methods(request: Request) -> str:
    """The methods the app serves at the request's path, for a 405's Allow header: every route of the
    path's, where Starlette names the first route's (``POST`` for ``GET /v1/documents`` too)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if route.matches(request.scope)[0] is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return ", ".join(sorted(methods))


JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "true or false"}


def whole_body_message(error: Mapping[str, Any]) -> str:
    """What is wrong with a request body as a whole (not one field of it), in a client's words."""
    received = error.get("input")
    if error.get("type") == "json_invalid":
        position = error.get("loc", ("body", "?"))[-1]
        reason = error.get("ctx", {}).get("error", "unreadable")
        return f"The request body is not valid JSON: {reason} (at character {position})."
    if error.get("type") == "missing":
        return "The request body is missing (or JSON null): send a JSON object."
    if isinstance(received, bytes):  # not parsed: sent without a JSON content type
        return "The request body must be a JSON object sent with Content-Type: application/json."
    kind = JSON_KINDS.get(type(received), "not an object")
    return f"The request body must be a JSON object, not {kind}."


def unreadable_body_message(cause: BaseException | None) -> str | None:
    """Why FastAPI could not read a JSON body, in a client's words, for the errors its parser raises
    besides a JSON syntax error (each was only 'There was an error parsing the body'); None for others."""
    if isinstance(cause, RecursionError):
        return "The request body nests JSON too deeply to read."
    if isinstance(cause, UnicodeDecodeError):
        return (
            f"The request body is not UTF-8 text: byte {cause.start} cannot be decoded "
            f"(as {cause.encoding}). Send JSON encoded as UTF-8."
        )
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        return f"The request body holds an integer of more than {sys.get_int_max_str_digits()} digits."
    return None


def count_error(errors: Counter, error: BaseException, kind: str | None = None) -> None:
    """Count ``error`` in the errors metric under ``kind`` (a service error's own by default), once however
    many layers see it."""
    if not getattr(error, "counted", False):
        own = error.kind if isinstance(error, ServiceError) else InternalError.kind
        errors.labels(kind or own).inc()
        mark_counted(error)


def mark_counted(error: BaseException) -> None:
    """Say that the errors metric counted ``error`` (the chat path records its own errors, under its own
    kinds), so that no error handler that sees it later counts it again."""
    vars(error)["counted"] = True  # any exception, not only a ServiceError: the chat path's 500s too
