"""``HTTPAdapter``: any codec as a ``RuntimeAdapter``, over ``httpx.Client``."""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType
from typing import Self

import httpx

from runport.contracts import (
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
)
from runport.http._exchange import Exchange, codec_failure
from runport.http._settings import CodecCarrier
from runport.ports import PortError, RuntimeAdapter, Sink

__all__ = ["HTTPAdapter"]


class HTTPAdapter(CodecCarrier[httpx.Client], RuntimeAdapter):
    """A codec made a runtime adapter, on the caller's thread, over an ``httpx.Client``.

    ``execute`` asks the codec for an unstreamed request, ``execute_streaming`` for a
    streamed one; both read the body through the same bounded loop and the same decoder, so
    they return equal receipts for the same content. Every sink call happens between two
    network reads; an exception from the sink closes the response and propagates unchanged.
    It never retries. Pass an ``httpx.Client`` to share a pool or add a transport; otherwise
    the adapter owns one, released by ``close()`` or a ``with`` block. Safe to share between
    threads, as the ``httpx.Client`` is.
    """

    def _hold(self, http_client: httpx.Client | None, transport: str | None) -> None:
        if transport not in (None, "httpx"):
            raise ValueError(
                f"transport={transport!r} is for the async adapters: the sync adapters send "
                "on httpx's own transport"
            )
        self._owns_client = http_client is None
        if http_client is None:
            http_client = httpx.Client(timeout=self._settings.client_timeout())
        self._client = http_client

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

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        outcome = self._call(request, None, stream=False)
        if isinstance(outcome, PortError):
            raise outcome
        return outcome

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        outcome = self._call(request, sink, stream=True)
        if isinstance(outcome, PortError):
            # The response is closed by now: the sink hears of the failure after the upstream
            # is released, as it would after a caller stop.
            sink(Failed(code=outcome.code, message=outcome.message))
            raise outcome
        sink(Complete(receipt=outcome))
        return outcome

    def _call(
        self, request: ExecutionRequest, sink: Sink | None, *, stream: bool
    ) -> ExecutionReceipt | PortError:
        """The receipt, or the upstream's failure — returned, not raised, so nothing a sink
        raises can be mistaken for it: what the sink raises leaves from here as it is, and
        the ``finally`` closes the response on the way."""
        opened = self._open(request, stream=stream)
        if isinstance(opened, PortError):
            return opened
        exchange, wire = opened
        http_request = self._settings.http_request(self._client, wire, exchange)
        exchange.sending(http_request)
        try:
            response = self._client.send(http_request, stream=True, auth=self._settings.auth)
        except (httpx.HTTPError, PortError) as error:  # PortError: the adapter's auth refused
            return exchange.failed_to_send(error)
        try:
            try:
                if not exchange.head(response):
                    return exchange.error(response, _error_body(response, exchange))
            except PortError as error:
                return error
            reads = exchange.body_reads(response)
            while True:
                try:
                    raw = next(reads, None)
                except httpx.HTTPError as error:
                    return exchange.interrupted(error)
                events = exchange.take(raw)
                try:
                    if sink is None:
                        for _ in events:
                            pass
                    else:
                        for event in events:  # the hot loop: one turn per event
                            sink(event)
                except (PortError, RecursionError) as error:
                    return codec_failure(error, events)  # or, the sink's own, raised again as it is
                if exchange.settled(raw):
                    if exchange.drains(raw):
                        _drain(reads, exchange)
                    return exchange.receipt()
        finally:
            response.close()
            exchange.closed(response)


def _drain(reads: Iterator[bytes], exchange: Exchange) -> None:
    try:
        for raw in reads:
            if exchange.drained(raw):
                return
    except httpx.HTTPError:
        return


def _error_body(response: httpx.Response, exchange: Exchange) -> bytes | None:
    gathered = exchange.error_body()
    try:
        for raw in exchange.body_reads(response):
            if not gathered.add(raw):
                return None
    except (httpx.HTTPError, PortError):
        return None
    return gathered.body()
