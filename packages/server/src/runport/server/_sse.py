"""Server-sent events as every SSE response writes them: an ``id:`` on each event frame
(``<run_id>:<seq>``), a ``: ping`` comment after a quiet spell, and the run id in the
``x-runport-run-id`` header, so a client can tell what it has read and where to resume.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence

import anyio
from starlette.types import Message, Send

from runport.ports import check_seconds
from runport.server._frames import PING

DEFAULT_HEARTBEAT_S = 15.0
"""Seconds without output after which an SSE response sends a ``: ping`` comment."""

RUN_ID_HEADER = "x-runport-run-id"
SSE_MEDIA_TYPE = b"text/event-stream; charset=utf-8"


def new_run_id() -> str:
    """A run's id: 128 random bits in hex, safe in a URL path and in an ``id:`` field (no
    colon), and not guessable, since it names the run to anyone who resumes it."""
    return secrets.token_hex(16)


def check_heartbeat(seconds: float) -> float:
    checked = check_seconds(seconds, "heartbeat")
    if checked is None:
        raise ValueError("heartbeat must be a positive, finite number of seconds")
    return checked


def sse_headers(run_id: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-type", SSE_MEDIA_TYPE),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
        (RUN_ID_HEADER.encode(), run_id.encode()),
    ]


class SSEWriter:
    """One SSE response's writing end: it starts the response on its first write, numbers
    nothing itself (frames come with their ids) and, while ``heartbeats`` runs beside it,
    sends ``: ping`` whenever ``heartbeat`` seconds passed with nothing sent — before the
    first event too, so a proxy does not cut a connection over a model's silent reasoning."""

    def __init__(
        self,
        send: Send,
        run_id: str,
        heartbeat: float,
        *,
        headers: Sequence[tuple[bytes, bytes]] | None = None,
    ) -> None:
        self._send = send
        self.run_id = run_id
        self._headers = list(headers) if headers is not None else sse_headers(run_id)
        self._heartbeat = heartbeat
        self.started = False
        self._sending = False
        self._last = time.monotonic()

    async def start(self) -> None:
        if not self.started:
            self.started = True
            await self._send(
                {"type": "http.response.start", "status": 200, "headers": self._headers}
            )

    async def write(self, chunk: bytes) -> None:
        if not self.started:
            await self.start()
        self._sending = True
        try:
            await self._send({"type": "http.response.body", "body": chunk, "more_body": True})
        finally:
            self._sending = False
            self._last = time.monotonic()

    async def end(self) -> None:
        if not self.started:
            await self.start()
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})

    def quiet_for(self) -> float:
        """Seconds until a ping is due (zero or less: due now)."""
        return self._last + self._heartbeat - time.monotonic()

    async def ping_if_quiet(self) -> None:
        if self.quiet_for() <= 0 and not self._sending:
            await self.write(PING)

    async def heartbeats(self) -> None:
        """Run beside the writes (in the response's task group, cancelled at its end)."""
        while True:
            due = self.quiet_for()
            if due > 0:
                await anyio.sleep(due)
            elif self._sending:  # a write is stuck on a slow client: no ping is needed
                await anyio.sleep(self._heartbeat)
            else:
                await self.write(PING)


def json_messages(status: int, body: bytes, run_id: str | None = None) -> list[Message]:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if run_id is not None:
        headers.append((RUN_ID_HEADER.encode(), run_id.encode()))
    return [
        {"type": "http.response.start", "status": status, "headers": headers},
        {"type": "http.response.body", "body": body},
    ]
