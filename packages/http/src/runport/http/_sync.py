"""``HTTPAdapter``: any codec as a ``RuntimeAdapter``, over ``httpx.Client``."""

from __future__ import annotations

from collections.abc import Generator
from types import TracebackType
from typing import Any, Self

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
from runport.ports import PortError, RuntimeAdapter, Sink

__all__ = ["HTTPAdapter"]

Batches = Generator[list[StreamEvent], None, ExecutionReceipt]


class HTTPAdapter(RuntimeAdapter):
    """A codec made a runtime adapter, on the caller's thread, over an ``httpx.Client``.

    ``execute`` asks the codec for an unstreamed request, ``execute_streaming`` for a
    streamed one; both read the body through the same bounded loop and the same decoder, so
    they return equal receipts for the same content. Every sink call happens between two
    network reads; an exception from the sink closes the response and propagates unchanged.
    It never retries. Pass an ``httpx.Client`` to share a pool or add a transport; otherwise
    the adapter owns one, released by ``close()`` or a ``with`` block. Safe to share between
    threads, as the ``httpx.Client`` is.
    """

    def __init__(
        self,
        codec: Codec,
        *,
        base_url: str,
        http_client: httpx.Client | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_response_bytes: int | None = None,
        deadline: float | None = None,
    ) -> None:
        self._codec = codec
        self._settings = AdapterSettings.build(
            base_url, timeout=timeout, max_response_bytes=max_response_bytes, deadline=deadline
        )
        self._owns_client = http_client is None
        if http_client is None:
            http_client = httpx.Client(timeout=self._settings.client_timeout())
        self._client = http_client

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={redact_url(self._settings.base_url)!r})"

    def close(self) -> None:
        """Release the HTTP client, if the adapter created it (a client passed in is yours)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def descriptor(self) -> AdapterDescriptor:
        return self._codec.descriptor()

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        batches = self._call(request, stream=False)
        try:
            while True:
                next(batches)
        except StopIteration as stop:
            receipt: ExecutionReceipt = stop.value
            return receipt
        finally:
            batches.close()

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        batches = self._call(request, stream=True)
        try:
            while True:
                try:
                    batch = next(batches)
                except StopIteration as stop:
                    receipt: ExecutionReceipt = stop.value
                    break
                except PortError as error:
                    # Raised inside the generator, so the response is closed by now: the sink
                    # hears of the failure after the upstream is released.
                    sink(Failed(code=error.code, message=error.message))
                    raise
                for event in batch:
                    sink(event)
        finally:
            batches.close()  # a sink's exception leaves through here: the response closes
        sink(Complete(receipt=receipt))
        return receipt

    def _call(self, request: ExecutionRequest, *, stream: bool) -> Batches:
        """The exchange, as batches of events between reads; returns the receipt. Raises
        ``PortError`` only for the upstream's failures (a sink is never called in here)."""
        settings = self._settings
        exchange = Exchange(
            self._codec,
            request,
            stream=stream,
            max_response_bytes=settings.max_response_bytes,
            deadline=settings.deadline,
        )
        wire = self._codec.encode(request, stream=stream)
        http_request = settings.http_request(self._client, wire, exchange)
        try:
            response = self._client.send(http_request, stream=True)
        except httpx.HTTPError as error:
            raise exchange.failed_to_send(error) from error
        try:
            if not exchange.head(response):
                raise exchange.error(response, _error_body(response, exchange))
            reads = response.iter_raw()
            while True:
                try:
                    raw = next(reads)
                except StopIteration:
                    events = exchange.end()
                    if events:
                        yield events
                    return exchange.receipt()
                except httpx.HTTPError as error:
                    return exchange.interrupted(error)
                events = exchange.feed(raw)
                if events:
                    yield events
                    if exchange.failure is not None:
                        raise exchange.failure
                if exchange.stopped:
                    return exchange.receipt()
                if exchange.finished:
                    _drain(reads, exchange)
                    return exchange.receipt()
        finally:
            response.close()


def _drain(reads: Any, exchange: Exchange) -> None:
    try:
        for raw in reads:
            if exchange.drained(raw):
                return
    except httpx.HTTPError:
        return


def _error_body(response: httpx.Response, exchange: Exchange) -> bytes | None:
    pieces: list[bytes] = []
    held = 0
    try:
        for raw in response.iter_raw():
            piece = exchange.error_piece(raw, held)
            if piece is None:
                return None
            pieces.append(piece)
            held += len(piece)
    except (httpx.HTTPError, PortError):
        return None
    return b"".join(pieces)
