"""Request bodies under a size cap, an idle timeout and a time for the whole body, enforced as their
bytes arrive.

Starlette reads a body whole before FastAPI parses it, and uvicorn caps neither its size nor its pauses,
so without this one client could send gigabytes into the service's memory, or hold a request open by
sending nothing, or by sending a byte a little more often than the idle timeout (and with it the bytes
its declared length holds of the budget below). The cap covers every route; it also bounds one
document's text (a JSON string decodes to no more characters than its bytes), so documents need no
limit of their own and a client reads one figure, ``EVALLENS_SERVICE_MAX_BODY_BYTES``, for everything
it may send.

A cap per body does not bound many bodies at once: a thousand clients sending a body of the largest size
each would hold gigabytes. So all requests share a budget of body bytes
(``EVALLENS_SERVICE_MAX_BODY_BYTES_IN_FLIGHT``), held as the bytes arrive until the request is
answered; a request that would go over it is a 429 with ``Retry-After``, like a full queue, before its
body is read when its declared length does not fit what the others hold. A declared length holds
nothing by itself: a client could declare 8 MiB on a few connections and send nothing, and every other
request with a body was a 429 while they waited.

A body sent with a content coding (``Content-Encoding: gzip``, ``br``, ...) is a 415 before a byte of it
is read: the service decodes none, so a gzip body was read as its compressed bytes (a 400 saying it is
not UTF-8) and a JSON body labelled ``br`` was answered as if it were unlabelled. RFC 9110 §15.5.16 and
RFC 7694 answer such a body with 415 and an ``Accept-Encoding`` header naming what the server takes. A
request without a body (no Transfer-Encoding, no Content-Length above 0) has nothing to decode and is
served whatever it says: a client that labels every request was refused ``GET /v1/documents``,
``/healthz`` and ``/openapi.json`` itself, none of which documents a 415.

A GET, HEAD or DELETE that does come with a body is a 400 before anything else is looked at (its size,
its coding): no route of those methods reads one. It was a 415 when labelled with a coding, a 413 when
its declared length was over the cap, else served with its body left unread, none of which the schema
of those routes said; now one answer, the 400 ``openapi.customize_openapi`` documents on each of them.

Each refusal is counted in the service's errors metric by its kind (``body_too_large``, ``body_timeout``,
``body_bytes_in_flight``, ``content_encoding``): none reaches a handler that would record it, and an
operator should see a client that sends too much, too slowly, too many at once or in a coding.
"""

import asyncio

from prometheus_client import Counter
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evallens.service.errors import (
    BODYLESS_METHODS,
    BodyBudgetFull,
    BodyNotAllowed,
    BodyStalled,
    BodyTooLarge,
    BodyTooSlow,
    ServiceError,
    UnsupportedContentEncoding,
    count_error,
)

__all__ = ["BodyLimit"]


class BodyLimit:
    """ASGI middleware: a body on a GET, HEAD or DELETE is a 400, and a body with a Content-Encoding other
    than ``identity`` a 415, before a byte is read (a request without a body is served whatever its
    Content-Encoding), a body over
    ``max_body_bytes`` is a 413 (by its Content-Length before a byte is read, else once the bytes read
    pass it), one that pauses for ``idle_timeout_s`` or is not all in after ``body_timeout_s`` is a 408,
    and one that would take the bytes all requests hold past ``budget_bytes`` is a 429
    (``retry_after_s``); each refusal counted in ``errors``."""

    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int,
        idle_timeout_s: float,
        body_timeout_s: float,
        budget_bytes: int,
        retry_after_s: int,
        errors: Counter,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.idle_timeout_s = idle_timeout_s
        self.body_timeout_s = body_timeout_s
        self.budget = BodyBudget(budget_bytes, retry_after_s)
        self.errors = errors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = content_length(scope)
        if has_body(scope, declared) and scope["method"] in BODYLESS_METHODS:
            await self._refuse(send, BodyNotAllowed(scope["method"]))
            return
        if (coding := content_coding(scope)) is not None and has_body(scope, declared):
            await self._refuse(send, UnsupportedContentEncoding(coding))
            return
        if declared is not None and declared > self.max_body_bytes:
            await self._refuse(send, BodyTooLarge(self.max_body_bytes))
            return
        if declared is not None and not self.budget.has_room(declared):
            await self._refuse(send, self.budget.full())
            return
        held = Holding(self.budget)
        try:
            await self._handle(scope, _CappedBody(receive, self, held), send)
        finally:
            held.release()  # only once answered: the app keeps the body it parsed until then

    async def _handle(self, scope: Scope, body: "_CappedBody", send: Send) -> None:
        started = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if body.refusal is not None:
                return  # the app's answer to a body it could not read (FastAPI makes it a 400): ours wins
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, body.receive, guarded_send)
        except Exception:
            if body.refusal is None:
                raise
        if body.refusal is not None:
            count_error(self.errors, body.refusal)
            if not started:
                await send_error(send, body.refusal)

    async def _refuse(self, send: Send, error: ServiceError) -> None:
        count_error(self.errors, error)
        await send_error(send, error)


class BodyBudget:
    """The body bytes all requests of one app hold together (one event loop: no lock needed)."""

    def __init__(self, budget_bytes: int, retry_after_s: int) -> None:
        self.budget_bytes = budget_bytes
        self.retry_after_s = retry_after_s
        self.num_bytes_held = 0

    def has_room(self, num_bytes: int) -> bool:
        """Whether ``num_bytes`` more fit beside what all requests hold now."""
        return self.num_bytes_held + num_bytes <= self.budget_bytes

    def full(self) -> BodyBudgetFull:
        """The refusal of a request that would go over the budget."""
        return BodyBudgetFull(self.budget_bytes, self.retry_after_s)


class Holding:
    """What one request holds of the budget: grown to cover its body, given back once it is answered."""

    def __init__(self, budget: BodyBudget) -> None:
        self.budget = budget
        self.num_bytes = 0

    def cover(self, num_bytes: int) -> bool:
        """Hold ``num_bytes`` in all for this request, if the budget has room; False if not."""
        more = num_bytes - self.num_bytes
        if more <= 0:
            return True
        if self.budget.num_bytes_held + more > self.budget.budget_bytes:
            return False
        self.budget.num_bytes_held += more
        self.num_bytes = num_bytes
        return True

    def release(self) -> None:
        """Give back everything this request held."""
        self.budget.num_bytes_held -= self.num_bytes
        self.num_bytes = 0


class _CappedBody:
    """The app's ``receive``: counts body bytes, refuses past the cap, past the shared budget, after an
    idle pause, or once the body has taken its time."""

    def __init__(self, receive: Receive, limit: BodyLimit, held: Holding) -> None:
        self._receive = receive
        self.max_body_bytes = limit.max_body_bytes
        self.idle_timeout_s = limit.idle_timeout_s
        self.body_timeout_s = limit.body_timeout_s
        self.body_deadline = asyncio.get_running_loop().time() + limit.body_timeout_s
        self.held = held
        self.num_bytes = 0
        self.complete = False
        self.refusal: ServiceError | None = None

    async def receive(self) -> Message:
        if self.refusal is not None:
            return {"type": "http.disconnect"}
        if self.complete:
            # After the body, receive only waits for a disconnect (streamed answers listen for one).
            return await self._receive()
        body_left_s = self.body_deadline - asyncio.get_running_loop().time()
        try:
            async with asyncio.timeout(max(min(self.idle_timeout_s, body_left_s), 0.0)):
                message = await self._receive()
        except TimeoutError:
            if body_left_s <= self.idle_timeout_s:
                self.refusal = BodyTooSlow(self.body_timeout_s, self.num_bytes)
            else:
                self.refusal = BodyStalled(self.idle_timeout_s, self.num_bytes)
            raise self.refusal from None
        if message["type"] != "http.request":
            self.complete = True
            return message
        self.num_bytes += len(message.get("body", b""))
        if self.num_bytes > self.max_body_bytes:
            self.refusal = BodyTooLarge(self.max_body_bytes)
            raise self.refusal
        if not self.held.cover(self.num_bytes):
            self.refusal = self.held.budget.full()
            raise self.refusal
        self.complete = not message.get("more_body", False)
        return message


def content_length(scope: Scope) -> int | None:
    """The request's declared Content-Length, if it has a valid one."""
    for name, value in scope["headers"]:
        if name == b"content-length" and value.isdigit():
            return int(value)
    return None


def has_body(scope: Scope, declared: int | None) -> bool:
    """Whether the request comes with a body: HTTP/1.1 sends one only with Transfer-Encoding or a
    Content-Length (RFC 9112 §6.3), and one of 0 bytes is none."""
    return bool(declared) or any(name == b"transfer-encoding" for name, _ in scope["headers"])


def content_coding(scope: Scope) -> str | None:
    """The first content coding the request's Content-Encoding names besides ``identity``, if any."""
    for header in Headers(scope=scope).getlist("content-encoding"):
        for coding in header.split(","):
            if coding.strip().lower() not in ("", "identity"):
                return coding.strip()
    return None


async def send_error(send: Send, error: ServiceError) -> None:
    """Answer with ``error``'s JSON body, as the service's error handlers do."""
    response = error.response()
    await send(
        {"type": "http.response.start", "status": response.status_code, "headers": response.raw_headers}
    )
    await send({"type": "http.response.body", "body": response.body})
