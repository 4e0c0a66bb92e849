"""uvicorn's HTTP/1.1 protocol (h11) with the two guards it lacks against slow clients.

Measured on uvicorn 0.54: a connection that sends part of a request head is held for ever
(``timeout_keep_alive`` runs only after a response), and ``limit_concurrency`` counts such
connections, so enough of them turn every new request into a 503. Here each request head has
a deadline that trickling bytes does not extend, counted from the connection's start (or, on
a kept-alive connection, from the first byte of the next request: until then uvicorn's
keep-alive timeout applies); and when the connection bound is reached, the connection
that has waited longest for a request head is closed to make room, so half-sent requests
cannot crowd out clients that send whole ones (docs/limits.md).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

DEFAULT_HEADER_TIMEOUT_S = 10.0
"""How long a request head (the request line and headers) may take to arrive."""

DEFAULT_MAX_CONNECTIONS = 512
"""How many connections the server holds at once (docs/limits.md); a request past it is 503."""


class _GuardedH11Protocol(H11Protocol):
    header_timeout: ClassVar[float] = DEFAULT_HEADER_TIMEOUT_S
    max_connections: ClassVar[int] = DEFAULT_MAX_CONNECTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self.waiting_since: float | None = None
        """When the connection began to wait for a request head (or for the rest of a
        refused request's body); ``None`` while a request is being served."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait()
        if len(self.connections) > self.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._served()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._idle_or_draining():
            self._wait()
        else:
            self._served()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.IDLE:
            # uvicorn's keep-alive timeout closes the connection if nothing more comes; once
            # bytes of a next request come, the head deadline takes over.
            self.waiting_since = self.loop.time()
        elif self._idle_or_draining():
            # Answered before its body was read (refused): uvicorn discards the rest as it
            # comes, for no longer than the head deadline.
            self._wait()

    def _idle_or_draining(self) -> bool:
        their = self.conn.their_state
        return their is h11.IDLE or (their is h11.SEND_BODY and self.conn.our_state is h11.DONE)

    def _wait(self) -> None:
        if self.waiting_since is None:
            self.waiting_since = self.loop.time()
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.header_timeout, self._overdue)

    def _served(self) -> None:
        self.waiting_since = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _overdue(self) -> None:
        self._deadline = None
        if self._idle_or_draining() and not self.transport.is_closing():
            self.transport.close()

    def _make_room(self) -> None:
        waiting = [
            other
            for other in self.connections
            if other is not self
            and isinstance(other, _GuardedH11Protocol)
            and other.waiting_since is not None
            and not other.transport.is_closing()
        ]
        if waiting:
            oldest = min(waiting, key=lambda other: other.waiting_since or 0.0)
            oldest.transport.close()


def guarded_protocol(header_timeout: float, max_connections: int) -> type[H11Protocol]:
    """The protocol class one server uses, with its own head deadline and bound."""
    return type(
        "GuardedH11Protocol",
        (_GuardedH11Protocol,),
        {"header_timeout": header_timeout, "max_connections": max_connections},
    )
