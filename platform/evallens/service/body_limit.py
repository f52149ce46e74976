"""Request bodies under a size cap and an idle timeout, enforced as their bytes arrive.

Starlette reads a body whole before FastAPI parses it, and uvicorn caps neither its size nor its pauses,
so without this one client could send gigabytes into the service's memory, or hold a request open by
sending nothing. The cap covers every route; it also bounds one document's text (a JSON string decodes
to no more characters than its bytes), so documents need no limit of their own and a client reads one
figure, ``EVALLENS_SERVICE_MAX_BODY_BYTES``, for everything it may send.
"""

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evallens.service.errors import BodyStalled, BodyTooLarge, ServiceError

__all__ = ["BodyLimit"]


class BodyLimit:
    """ASGI middleware: a body over ``max_body_bytes`` is a 413 (by its Content-Length before a byte is
    read, else once the bytes read pass it), one that pauses for ``idle_timeout_s`` is a 408."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, idle_timeout_s: float) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.idle_timeout_s = idle_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await send_error(send, BodyTooLarge(self.max_body_bytes))
            return
        body = _CappedBody(receive, self.max_body_bytes, self.idle_timeout_s)
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
        if body.refusal is not None and not started:
            await send_error(send, body.refusal)


class _CappedBody:
    """The app's ``receive``: counts body bytes, refuses past the cap or after an idle pause."""

    def __init__(self, receive: Receive, max_body_bytes: int, idle_timeout_s: float) -> None:
        self._receive = receive
        self.max_body_bytes = max_body_bytes
        self.idle_timeout_s = idle_timeout_s
        self.num_bytes = 0
        self.complete = False
        self.refusal: ServiceError | None = None

    async def receive(self) -> Message:
        if self.refusal is not None:
            return {"type": "http.disconnect"}
        if self.complete:
            # After the body, receive only waits for a disconnect (streamed answers listen for one).
            return await self._receive()
        try:
            async with asyncio.timeout(self.idle_timeout_s):
                message = await self._receive()
        except TimeoutError:
            self.refusal = BodyStalled(self.idle_timeout_s, self.num_bytes)
            raise self.refusal from None
        if message["type"] != "http.request":
            self.complete = True
            return message
        self.num_bytes += len(message.get("body", b""))
        if self.num_bytes > self.max_body_bytes:
            self.refusal = BodyTooLarge(self.max_body_bytes)
            raise self.refusal
        self.complete = not message.get("more_body", False)
        return message


def content_length(scope: Scope) -> int | None:
    """The request's declared Content-Length, if it has a valid one."""
    for name, value in scope["headers"]:
        if name == b"content-length" and value.isdigit():
            return int(value)
    return None


async def send_error(send: Send, error: ServiceError) -> None:
    """Answer with ``error``'s JSON body, as the service's error handlers do."""
    response = error.response()
    await send(
        {"type": "http.response.start", "status": response.status_code, "headers": response.raw_headers}
    )
    await send({"type": "http.response.body", "body": response.body})
