"""uvicorn's HTTP protocol with a deadline on each request head, for the collector and the service.

uvicorn times out a connection only once it has answered a request and heard nothing more: a connection
that never sends a whole request head stays open for as long as its client keeps it, counted against
``limit_concurrency`` where one is set, and holding one of the process's file descriptors in any case.
Here each connection must finish its first request head, and each next one after an answer, within
``head_timeout_s``, or it is closed.
"""

import asyncio
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

__all__ = ["head_deadline_protocol"]


def head_deadline_protocol(head_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools or h11, as uvicorn picks) closing connections whose request
    head is not complete ``head_timeout_s`` after they opened or answered."""

    class HeadDeadlineProtocol(AutoHTTPProtocol):  # type: ignore[valid-type,misc]
        # both uvicorn protocols set these; ``cycle`` is replaced by a new one once a head is complete
        cycle: Any
        loop: asyncio.AbstractEventLoop
        transport: asyncio.Transport
        _head_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._arm_head_deadline()

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
