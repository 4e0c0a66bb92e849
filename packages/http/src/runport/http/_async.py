"""``AsyncHTTPAdapter``: any codec as an ``AsyncRuntimeAdapter``, over ``httpx.AsyncClient``.

The sync driver's twin: the same ``Exchange`` does the bounds, the deadline, the head's checks
and the codec's feeding; only sending and reading are awaited here. The sink is awaited
before the next read (backpressure: at most one network read beyond the event being
delivered), and every await of it counts against the call's deadline: a sink still busy when
the deadline passes is cancelled, the call fails with ``TQX_RUNTIME_TIMEOUT``, and its terminal
event is awaited for at most ``TERMINAL_GRACE_S``. Cancelling the calling task closes the
response, sends nothing more, and lets ``CancelledError`` through; the adapter stays usable.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import weakref
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Final, Self

import httpx

from runport.contracts import (
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
)
from runport.http._codec import HTTPRequest
from runport.http._exchange import Exchange, codec_failure
from runport.http._settings import AdapterSettings, CodecCarrier
from runport.http._shards import DEFAULT_ASYNC_LIMITS, Shards, TransportMaker
from runport.ports import (
    DEFAULT_DEADLINE_S,
    AsyncRuntimeAdapter,
    AsyncSink,
    PortError,
    deliver_terminal,
)

__all__ = ["ASYNC_TRANSPORTS", "DEFAULT_ASYNC_LIMITS", "TRANSPORT_VARIABLE", "AsyncHTTPAdapter"]

ASYNC_TRANSPORTS: Final = ("httpx", "aiohttp")
"""The names ``transport=`` takes on an async adapter, httpx's own (the default) and aiohttp's."""

TRANSPORT_VARIABLE: Final = "RUNPORT_ASYNC_TRANSPORT"
"""The environment variable an async adapter reads its transport from when given none."""


def _transport_maker(transport: str | None) -> TransportMaker | None:
    """What makes the shards' transports for ``transport`` (``None``: httpx's own), checked
    at construction: an unknown name, or aiohttp not installed, is refused here, not at the
    first call."""
    where = "transport"
    if transport is None:
        transport = os.environ.get(TRANSPORT_VARIABLE) or "httpx"
        where = TRANSPORT_VARIABLE
    if transport not in ASYNC_TRANSPORTS:
        raise ValueError(f"{where} must be one of {', '.join(ASYNC_TRANSPORTS)}, not {transport!r}")
    if transport == "httpx":
        return None
    if importlib.util.find_spec("aiohttp") is None:
        raise ValueError(
            f"{where}={transport!r} needs aiohttp: pip install 'runport-http[aiohttp]'"
        )
    from runport.http._aiohttp import AiohttpTransport  # only once aiohttp is known there

    return AiohttpTransport


def _discard(event: StreamEvent) -> None:
    """The sink of ``execute``: the same reading, with nobody listening (a plain sink, so
    nothing is awaited per event)."""


class AsyncHTTPAdapter(CodecCarrier[httpx.AsyncClient], AsyncRuntimeAdapter):
    """A codec made an async runtime adapter, over an ``httpx.AsyncClient``.

    Same settings and behaviour as ``HTTPAdapter``, so the two give equal receipts and
    equal failures for the same upstream bytes. Nothing binds to an event loop at
    construction. Pass an ``httpx.AsyncClient`` to share a pool (used as it is); otherwise the
    adapter makes its own per event loop it is used on: a few clients of at most fifty
    exchanges each, together within ``DEFAULT_ASYNC_LIMITS`` (one pool of hundreds of live
    streams spends most of its CPU looking over its connections), released by ``aclose()`` or
    ``async with`` on that loop. Their connections are httpx's own, or aiohttp's with
    ``transport="aiohttp"`` (or ``RUNPORT_ASYNC_TRANSPORT=aiohttp``; the ``aiohttp`` extra):
    the same code above them, a third of the client's CPU at hundreds of streams.
    """

    def _hold(self, http_client: httpx.AsyncClient | None, transport: str | None) -> None:
        if http_client is not None and transport is not None:
            raise ValueError(
                "give http_client or transport, not both: a client passed in sends on its own "
                "transport"
            )
        self._transport = None if http_client is not None else _transport_maker(transport)
        self._client = http_client
        # Clients made here belong to the loop that first used them (their pooled connections
        # do): one set per running loop, made on first use, so construction binds to none.
        self._own: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Shards] = (
            weakref.WeakKeyDictionary()
        )

    def _shards_here(self) -> Shards:
        loop = asyncio.get_running_loop()
        shards = self._own.get(loop)
        if shards is None:
            shards = self._own[loop] = Shards(
                self._settings.client_timeout(), transport=self._transport
            )
        return shards

    async def aclose(self) -> None:
        """Release the HTTP clients the adapter made for the running loop (a client passed in
        is yours). The adapter stays usable: a later call makes fresh ones."""
        if self._client is None:
            shards = self._own.pop(asyncio.get_running_loop(), None)
            if shards is not None:
                await shards.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        outcome, _ = await self._call(request, _discard, stream=False)
        if isinstance(outcome, PortError):
            raise outcome
        return outcome

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        outcome, left = await self._call(request, sink, stream=True)
        # The response is closed by now, as in the sync driver. The terminal event is awaited
        # for the time left (or the grace, once the deadline has passed), so a sink that never
        # returns cannot hold the call past its deadline.
        if isinstance(outcome, PortError):
            await deliver_terminal(sink, Failed(code=outcome.code, message=outcome.message), left)
            raise outcome
        await deliver_terminal(sink, Complete(receipt=outcome), left)
        return outcome

    async def _call(
        self, request: ExecutionRequest, sink: AsyncSink, *, stream: bool
    ) -> tuple[ExecutionReceipt | PortError, float]:
        """The receipt, or the upstream's failure (returned, not raised, so nothing a sink
        raises can be mistaken for it: what the sink raises propagates from here as is), and
        the seconds left before the call's deadline."""
        opened = self._open(request, stream=stream)
        if isinstance(opened, PortError):
            # Refused before the clock started: the terminal has the whole of the deadline.
            return opened, self._settings.deadline or DEFAULT_DEADLINE_S
        exchange, wire = opened
        if self._client is not None:
            outcome = await _bounded(self._client, exchange, wire, sink, self._settings)
            return outcome, exchange.remaining()
        shards = self._shards_here()
        shard = shards.take()
        try:
            outcome = await _bounded(shard.client, exchange, wire, sink, self._settings)
        finally:
            shards.give(shard)
        return outcome, exchange.remaining()


async def _bounded(
    client: httpx.AsyncClient,
    exchange: Exchange,
    wire: HTTPRequest,
    sink: AsyncSink,
    settings: AdapterSettings,
) -> ExecutionReceipt | PortError:
    http_request = settings.http_request(client, wire, exchange)
    limit = asyncio.timeout(exchange.remaining())
    try:
        async with limit:
            return await _exchange(client, exchange, http_request, sink, settings.auth)
    except TimeoutError:
        if not limit.expired():
            raise  # the sink's own
        return exchange.interrupted(None)


async def _exchange(
    client: httpx.AsyncClient,
    exchange: Exchange,
    http_request: httpx.Request,
    sink: AsyncSink,
    auth: httpx.Auth | httpx._client.UseClientDefault,
) -> ExecutionReceipt | PortError:
    exchange.sending(http_request)
    try:
        response = await client.send(http_request, stream=True, auth=auth)
    except (httpx.HTTPError, PortError) as error:  # PortError: the adapter's auth refused
        return exchange.failed_to_send(error)
    try:
        try:
            if not exchange.head(response):
                return exchange.error(response, await _error_body(response, exchange))
        except PortError as error:
            return error
        reads = exchange.abody_reads(response)
        while True:
            try:
                raw = await anext(reads, None)
            except httpx.HTTPError as error:
                return exchange.interrupted(error)
            events = exchange.take(raw)
            try:
                for event in events:  # the hot loop: one turn per event
                    delivered = sink(event)
                    if delivered is not None:
                        await delivered  # backpressure: nothing more is read until it is done
            except (PortError, RecursionError) as error:
                return codec_failure(error, events)  # or, the sink's own, raised again as it is
            if exchange.settled(raw):
                if exchange.drains(raw):
                    await _drain(reads, exchange)
                return exchange.receipt()
    finally:
        await response.aclose()
        exchange.closed(response)


async def _drain(reads: AsyncIterator[bytes], exchange: Exchange) -> None:
    try:
        async for raw in reads:
            if exchange.drained(raw):
                return
    except httpx.HTTPError:
        return


async def _error_body(response: httpx.Response, exchange: Exchange) -> bytes | None:
    gathered = exchange.error_body()
    try:
        async for raw in exchange.abody_reads(response):
            if not gathered.add(raw):
                return None
    except (httpx.HTTPError, PortError):
        return None
    return gathered.body()
