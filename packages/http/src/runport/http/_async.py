"""``AsyncHTTPAdapter``: any codec as an ``AsyncRuntimeAdapter``, over ``httpx.AsyncClient``.

The sync driver's twin: the same ``Exchange`` does the bounds, the deadline, the head's checks
and the codec's feeding; only sending and reading are awaited here. The sink is awaited
before the next read (backpressure: at most one network read beyond the event being
delivered). Cancelling the calling task closes the response, sends nothing more, and lets
``CancelledError`` through; the adapter stays usable.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Final, Self

import httpx

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
)
from runport.http._codec import Codec
from runport.http._exchange import Exchange
from runport.http._settings import AdapterSettings
from runport.http._urls import redact_url
from runport.ports import AsyncRuntimeAdapter, AsyncSink, PortError, deliver

__all__ = ["DEFAULT_ASYNC_LIMITS", "AsyncHTTPAdapter"]

DEFAULT_ASYNC_LIMITS: Final = httpx.Limits(max_connections=1000, max_keepalive_connections=200)
"""The pool of a client the adapter makes itself: a thousand streams at once (httpx's own
default is a hundred, which would queue the hundred-and-first)."""


async def _discard(event: StreamEvent) -> None:
    """The sink of ``execute``: the same reading, with nobody listening."""


class AsyncHTTPAdapter(AsyncRuntimeAdapter):
    """A codec made an async runtime adapter, over an ``httpx.AsyncClient``.

    Same settings and behaviour as ``HTTPAdapter``, so the two give equal receipts and
    equal failures for the same upstream bytes. Nothing binds to an event loop at
    construction. Pass an ``httpx.AsyncClient`` to share a pool; otherwise the adapter makes
    one per event loop it is used on (``DEFAULT_ASYNC_LIMITS``), released by ``aclose()`` or
    ``async with`` on that loop.
    """

    def __init__(
        self,
        codec: Codec,
        *,
        base_url: str,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_response_bytes: int | None = None,
        deadline: float | None = None,
    ) -> None:
        self._codec = codec
        self._settings = AdapterSettings.build(
            base_url, timeout=timeout, max_response_bytes=max_response_bytes, deadline=deadline
        )
        self._client = http_client
        # A client made here belongs to the loop that first used it (its pooled connections
        # do): one per running loop, made on first use, so construction binds to none.
        self._own: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def _client_here(self) -> httpx.AsyncClient:
        if self._client is not None:
            return self._client
        loop = asyncio.get_running_loop()
        client = self._own.get(loop)
        if client is None:
            client = self._own[loop] = httpx.AsyncClient(
                timeout=self._settings.client_timeout(), limits=DEFAULT_ASYNC_LIMITS
            )
        return client

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={redact_url(self._settings.base_url)!r})"

    async def aclose(self) -> None:
        """Release the HTTP client the adapter made for the running loop (a client passed in
        is yours). The adapter stays usable: a later call makes a fresh client."""
        if self._client is None:
            client = self._own.pop(asyncio.get_running_loop(), None)
            if client is not None:
                await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def descriptor(self) -> AdapterDescriptor:
        return self._codec.descriptor()

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        outcome = await self._call(request, _discard, stream=False)
        if isinstance(outcome, PortError):
            raise outcome
        return outcome

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        outcome = await self._call(request, sink, stream=True)
        if isinstance(outcome, PortError):
            # The response is closed by now, as in the sync driver.
            await deliver(sink, Failed(code=outcome.code, message=outcome.message))
            raise outcome
        await deliver(sink, Complete(receipt=outcome))
        return outcome

    async def _call(
        self, request: ExecutionRequest, sink: AsyncSink, *, stream: bool
    ) -> ExecutionReceipt | PortError:
        """The receipt, or the upstream's failure (returned, not raised, so nothing a sink
        raises can be mistaken for it: what the sink raises propagates from here as is)."""
        settings = self._settings
        try:
            exchange = Exchange(
                self._codec,
                request,
                stream=stream,
                max_response_bytes=settings.max_response_bytes,
                deadline=settings.deadline,
            )
            wire = self._codec.encode(request, stream=stream)
        except PortError as error:
            return error
        client = self._client_here()
        http_request = settings.http_request(client, wire, exchange)
        limit = asyncio.timeout(exchange.remaining())
        try:
            async with limit:
                return await _exchange(client, exchange, http_request, sink)
        except TimeoutError:
            if not limit.expired():
                raise  # the sink's own
            try:
                return exchange.interrupted(None)
            except PortError as error:
                return error


async def _exchange(
    client: httpx.AsyncClient, exchange: Exchange, http_request: httpx.Request, sink: AsyncSink
) -> ExecutionReceipt | PortError:
    try:
        response = await client.send(http_request, stream=True)
    except httpx.HTTPError as error:
        failure = exchange.failed_to_send(error)
        failure.__cause__ = error
        return failure
    try:
        try:
            if not exchange.head(response):
                return exchange.error(response, await _error_body(response, exchange))
        except PortError as error:
            return error
        reads = response.aiter_raw()
        while True:
            try:
                raw = await anext(reads)
            except StopAsyncIteration:
                try:
                    events = exchange.end()
                except PortError as error:
                    return error
                for event in events:
                    await deliver(sink, event)
                return _receipt(exchange)
            except httpx.HTTPError as error:
                try:
                    return exchange.interrupted(error)
                except PortError as failure:
                    return failure
            try:
                events = exchange.feed(raw)
            except PortError as error:
                return error
            for event in events:
                await deliver(sink, event)
            if events and exchange.failure is not None:
                return exchange.failure
            if exchange.stopped:
                return _receipt(exchange)
            if exchange.finished:
                await _drain(reads, exchange)
                return _receipt(exchange)
    finally:
        await response.aclose()


def _receipt(exchange: Exchange) -> ExecutionReceipt | PortError:
    try:
        return exchange.receipt()
    except PortError as error:
        return error


async def _drain(reads: AsyncIterator[bytes], exchange: Exchange) -> None:
    try:
        async for raw in reads:
            if exchange.drained(raw):
                return
    except httpx.HTTPError:
        return


async def _error_body(response: httpx.Response, exchange: Exchange) -> bytes | None:
    pieces: list[bytes] = []
    held = 0
    try:
        async for raw in response.aiter_raw():
            piece = exchange.error_piece(raw, held)
            if piece is None:
                return None
            pieces.append(piece)
            held += len(piece)
    except (httpx.HTTPError, PortError):
        return None
    return b"".join(pieces)
