"""uvicorn's HTTP protocol with a deadline and a size cap on each request head, for the collector and the
service.

uvicorn times out a connection only once it has answered a request and heard nothing more: a connection
that never sends a whole request head stays open for as long as its client keeps it, counted against
``limit_concurrency`` where one is set, and holding one of the process's file descriptors in any case.
Here each connection must finish its first request head, and each next one after an answer, within
``head_timeout_s``, or it is closed.

uvicorn's httptools protocol (its choice when httptools is installed) takes a request head of any size,
and httptools gathers a header value by joining each new piece to all before it, on the event loop:
one client sending a header of a few hundred MiB held memory for all of it and stalled every other
request for seconds at a time. Here a head that passes ``max_head_bytes`` is a 431 and its connection
is closed (h11, uvicorn's other choice, refuses heads over 16 KiB by itself).
"""

import asyncio
from typing import Any

from starlette.requests import Request
from uvicorn.protocols.http.auto import AutoHTTPProtocol

__all__ = ["MAX_HEAD_BYTES", "client_address", "head_deadline_protocol"]

MAX_HEAD_BYTES = 64 * 1024
HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: text/plain; charset=utf-8\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s"
)


def head_deadline_protocol(
    head_timeout_s: float, max_head_bytes: int = MAX_HEAD_BYTES
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools or h11, as uvicorn picks) closing connections whose request
    head is not complete ``head_timeout_s`` after they opened or answered, and answering 431 to a head
    over ``max_head_bytes``."""
    refusal = f"The request head is over {max_head_bytes} bytes.\n".encode()

    class HeadDeadlineProtocol(AutoHTTPProtocol):  # type: ignore[valid-type,misc]
        # both uvicorn protocols set these; ``cycle`` is replaced by a new one once a head is complete
        cycle: Any
        loop: asyncio.AbstractEventLoop
        transport: asyncio.Transport
        _head_deadline: asyncio.TimerHandle | None = None
        _in_head = False  # httptools is between a message's first byte and the end of its head
        _num_head_bytes = 0

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._arm_head_deadline()

        def data_received(self, data: bytes) -> None:
            in_head = self._in_head
            super().data_received(data)
            # Only pieces wholly inside a head count (a piece that starts or ends one may hold a body's
            # bytes too), so a head is refused at most two pieces past the cap, never for a body.
            if in_head and self._in_head and not self.transport.is_closing():
                self._num_head_bytes += len(data)
                if self._num_head_bytes > max_head_bytes:
                    self._in_head = False
                    self.transport.write(HEAD_TOO_LARGE % (len(refusal), refusal))
                    self.transport.close()

        def on_message_begin(self) -> None:  # httptools only
            super().on_message_begin()
            self._in_head, self._num_head_bytes = True, 0

        def on_headers_complete(self) -> None:  # httptools only
            self._in_head = False
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_head_deadline()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head_deadline()
            super().connection_lost(exc)

        def _arm_head_deadline(self) -> None:
            self._disarm_head_deadline()
            if not self.transport.is_closing():
                self._head_deadline = self.loop.call_later(head_timeout_s, self._head_overdue, self.cycle)

        def _disarm_head_deadline(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None

        def _head_overdue(self, cycle_when_armed: Any) -> None:
            """Close the connection unless a request head came, or a request is being answered."""
            self._head_deadline = None
            answering = self.cycle is not None and not self.cycle.response_complete
            if self.cycle is cycle_when_armed and not answering and not self.transport.is_closing():
                self.transport.close()

    return HeadDeadlineProtocol


def client_address(request: Request) -> str:
    """The address of the request's TCP peer: the collector and the service tell uvicorn not to take it
    from ``X-Forwarded-For`` (``proxy_headers=False``), so a client cannot name its own."""
    return request.client.host if request.client is not None else "unknown"
