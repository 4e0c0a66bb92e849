"""An ``httpx.AsyncBaseTransport`` of the benchmarks' own: asyncio streams, h11 for framing.

What httpx's default transport does with httpcore and anyio, done with the least machinery:
one ``asyncio.open_connection`` per connection, ``h11.Connection`` to write the request and
parse the response, and a small pool — per origin a list of idle connections, taken last in
first out, and an optional ``asyncio.Semaphore`` bounding the connections open at once. No
pool scan: taking a connection is a ``list.pop``, giving it back a ``list.append``.

A body read hands the caller everything h11 has parsed from one socket read, joined (h11
returns one ``Data`` per chunk of the chunked encoding; the adapter's decoder wants bytes, not
chunk boundaries). Timeouts follow ``request.extensions["timeout"]`` (connect, write, read:
``asyncio.timeout`` around the awaits; pool: the wait for the semaphore) and end as httpx's
own exceptions, as do a refused connection (``ConnectError``), a peer that breaks the
protocol or closes mid-body (``RemoteProtocolError``) and a socket error (``ReadError``,
``WriteError``). A response closed before its end closes its connection; one read to its end
goes back to the pool. HTTP only (no TLS, no proxies, no HTTP/2): a benchmark contender, not
a product transport (benchmarks/README.md, adr/0068).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import h11
import httpx

READ_SIZE = 65536

_Origin = tuple[bytes, bytes, int]


class _Connection:
    __slots__ = ("h11", "origin", "reader", "writer")

    def __init__(
        self, origin: _Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)

    def close(self) -> None:
        self.writer.close()


class _Body(httpx.AsyncByteStream):
    """One response's body, read from its connection; the connection goes back to the pool
    when the body ends, and is closed when the body is closed before its end."""

    __slots__ = ("_connection", "_done", "_read_timeout", "_transport")

    def __init__(
        self, transport: H11Transport, connection: _Connection, read_timeout: float | None
    ) -> None:
        self._transport = transport
        self._connection = connection
        self._read_timeout = read_timeout
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        parser = connection.h11
        reader = connection.reader
        timeout = self._read_timeout
        pieces: list[bytes] = []
        while not self._done:
            try:
                event = parser.next_event()
            except h11.RemoteProtocolError as error:
                raise httpx.RemoteProtocolError(str(error)) from error
            kind = type(event)
            if kind is h11.Data:
                pieces.append(event.data)  # type: ignore[union-attr]
                continue
            if kind is h11.EndOfMessage:
                # back to the pool before the last bytes are handed over: a caller that stops
                # once it has them never resumes this generator
                self._done = True
                self._transport._give(connection)
                if pieces:
                    yield b"".join(pieces)
                return
            if event is h11.NEED_DATA:
                if pieces:
                    yield b"".join(pieces)
                    pieces = []
                data = await _read(reader, timeout)
                try:
                    parser.receive_data(data)
                except h11.RemoteProtocolError as error:
                    raise httpx.RemoteProtocolError(str(error)) from error
                continue
            if kind is h11.ConnectionClosed:
                raise httpx.RemoteProtocolError("the server closed the connection mid-body")
            raise httpx.RemoteProtocolError(f"unexpected {kind.__name__} in a response body")

    async def aclose(self) -> None:
        if not self._done:
            self._done = True
            self._transport._drop(self._connection)


async def _read(reader: asyncio.StreamReader, timeout: float | None) -> bytes:
    try:
        if timeout is None:
            return await reader.read(READ_SIZE)
        async with asyncio.timeout(timeout):
            return await reader.read(READ_SIZE)
    except TimeoutError as error:
        raise httpx.ReadTimeout("no bytes within the read timeout") from error
    except OSError as error:
        raise httpx.ReadError(str(error)) from error


def _next_event(connection: _Connection) -> Any:
    try:
        return connection.h11.next_event()
    except h11.RemoteProtocolError as error:
        raise httpx.RemoteProtocolError(str(error)) from error


class H11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio streams with h11; at most ``max_connections`` open at once (no
    bound when ``None``), idle ones kept per origin and reused."""

    def __init__(self, max_connections: int | None = None) -> None:
        self._idle: dict[_Origin, list[_Connection]] = {}
        self._bound = None if max_connections is None else asyncio.Semaphore(max_connections)
        self._open: set[_Connection] = set()

    def _give(self, connection: _Connection) -> None:
        try:
            connection.h11.start_next_cycle()
        except h11.LocalProtocolError:  # the server asked to close, or the request was cut
            self._drop(connection)
            return
        self._idle.setdefault(connection.origin, []).append(connection)

    def _drop(self, connection: _Connection) -> None:
        connection.close()
        if connection in self._open:
            self._open.discard(connection)
            if self._bound is not None:
                self._bound.release()

    async def _take(self, origin: _Origin, timeouts: dict[str, float | None]) -> _Connection:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if not connection.reader.at_eof() and not connection.writer.is_closing():
                return connection
            self._drop(connection)  # the server closed it while it waited
        if self._bound is not None:
            try:
                async with asyncio.timeout(timeouts.get("pool")):
                    await self._bound.acquire()
            except TimeoutError as error:
                raise httpx.PoolTimeout("no connection free within the pool timeout") from error
        try:
            async with asyncio.timeout(timeouts.get("connect")):
                reader, writer = await asyncio.open_connection(
                    origin[1].decode("ascii"), origin[2], limit=READ_SIZE
                )
        except BaseException as error:
            if self._bound is not None:
                self._bound.release()
            if isinstance(error, TimeoutError):
                raise httpx.ConnectTimeout("no connection within the connect timeout") from error
            if isinstance(error, OSError):
                raise httpx.ConnectError(str(error)) from error
            raise
        connection = _Connection(origin, reader, writer)
        self._open.add(connection)
        return connection

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"this transport speaks http only, not {url.scheme}")
        port = url.port or 80
        origin = (b"http", url.raw_host, port)
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        connection = await self._take(origin, timeouts)
        try:
            return await self._exchange(connection, request, timeouts)
        except BaseException:
            self._drop(connection)
            raise

    async def _exchange(
        self, connection: _Connection, request: httpx.Request, timeouts: dict[str, float | None]
    ) -> httpx.Response:
        parser = connection.h11
        headers = list(request.headers.raw)
        body = await request.aread()
        try:
            wire = parser.send(
                h11.Request(method=request.method, target=request.url.raw_path, headers=headers)
            )
            if body:
                wire += parser.send(h11.Data(data=body))
            wire += parser.send(h11.EndOfMessage())
        except h11.LocalProtocolError as error:
            raise httpx.LocalProtocolError(str(error)) from error
        writer = connection.writer
        try:
            writer.write(wire)
            if writer.transport.get_write_buffer_size():
                async with asyncio.timeout(timeouts.get("write")):
                    await writer.drain()
        except TimeoutError as error:
            raise httpx.WriteTimeout("the request was not sent within the write timeout") from error
        except OSError as error:
            raise httpx.WriteError(str(error)) from error
        read_timeout = timeouts.get("read")
        while True:
            event = _next_event(connection)
            if event is h11.NEED_DATA:
                data = await _read(connection.reader, read_timeout)
                try:
                    parser.receive_data(data)
                except h11.RemoteProtocolError as error:
                    raise httpx.RemoteProtocolError(str(error)) from error
                continue
            if isinstance(event, h11.InformationalResponse):
                continue
            if isinstance(event, h11.Response):
                break
            raise httpx.RemoteProtocolError("the server closed the connection before its answer")
        return httpx.Response(
            status_code=event.status_code,
            headers=event.headers.raw_items(),
            stream=_Body(self, connection, read_timeout),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": event.reason},
        )

    async def aclose(self) -> None:
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()
