"""The codec interface: a provider's wire protocol with no I/O of its own (ADR 0012).

A codec turns an execution request into an ``HTTPRequest`` and opens a ``ResponseDecoder``
per call, which turns the response's bytes, as they arrive, into stream events, and the end
of the body into a receipt or a ``PortError``. Everything between — sockets, pools, bounds,
the deadline, decompression, status codes, transport errors, closing the response — belongs
to the drivers (``HTTPAdapter``, ``AsyncHTTPAdapter``), written once for every provider.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runport.contracts import (
    AdapterDescriptor,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
)

__all__ = ["Codec", "HTTPRequest", "ResponseDecoder"]


@dataclass(frozen=True, slots=True)
class HTTPRequest:
    """What a codec asks the driver to send.

    ``path`` is appended to the adapter's ``base_url`` path; ``params`` join its query (so
    a query in ``base_url``, Azure's ``api-version`` say, is kept).
    """

    method: str
    path: str
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)


class ResponseDecoder(ABC):
    """One call's decoding state, fed the body of a 2xx response.

    ``feed`` returns the progress events the bytes completed, as any iterable: the driver
    delivers each before it asks for the next, and drains the iterable before it reads any
    further. A generator is the cheapest choice — each event is delivered and dropped
    before the next is made — and it may raise ``PortError`` after yielding some events
    (they reach the caller first, as the law asks). ``end`` is called when the body ended
    cleanly and returns the events its end completes (a whole JSON body's, say).
    ``receipt`` is called last — after ``end``, or once ``finished`` turned true, or when a
    transport failure struck after ``complete`` turned true — and returns the receipt or
    raises ``PortError`` (a body that ended before the protocol's completion marker raises
    ``TQX_RUNTIME_STREAM_TRUNCATED``).

    ``complete``: the completion marker arrived, so the answer is whole; a reset, stall or
    deadline after it still ends in ``receipt()``. ``finished``: nothing the rest of the
    body may say matters (OpenAI's ``[DONE]``); the driver drains the body for the
    connection's sake and ignores what it holds.
    """

    complete: bool = False
    finished: bool = False

    @abstractmethod
    def feed(self, data: bytes) -> Iterable[StreamEvent]: ...

    def end(self) -> Iterable[StreamEvent]:
        return ()

    @abstractmethod
    def receipt(self) -> ExecutionReceipt: ...


class Codec(ABC):
    """A provider's protocol, sans I/O. Codecs are immutable once built, so one codec may
    serve any number of concurrent calls, threads and event loops.

    ``encode`` raises ``PortError`` (``TQX_DATA_INVALID``) for a request the protocol cannot
    carry. ``error_text`` picks the provider's own message out of a decoded JSON error body
    (return it raw: the driver bounds and redacts it); the default finds none.
    ``retry_after_ms`` reads a back-off hint the body carries (Gemini's ``RetryInfo``), used
    when the response's headers name none; the default reads none. ``error_code`` classifies
    a non-2xx answer the codec knows better than its status does (a provider's retryable 424,
    a 429 that is a spent quota, not a throttle); ``None``, the default, keeps the status's
    own reading (docs/codecs.md). ``secrets``
    are strings the driver removes from any provider text before it reaches a message; a codec
    with any (an API key it sends) refuses a ``base_url`` with user-info, whose Basic
    credentials would take the key's place.
    """

    secrets: tuple[str, ...] = ()

    @abstractmethod
    def descriptor(self) -> AdapterDescriptor: ...

    @abstractmethod
    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest: ...

    @abstractmethod
    def decoder(
        self, request: ExecutionRequest, *, stream: bool, media_type: str
    ) -> ResponseDecoder:
        """A fresh decoder for one response; ``media_type`` is its lower-cased
        ``Content-Type`` without parameters ("" when absent)."""

    def error_text(self, body: Any) -> Any:
        return None

    def retry_after_ms(self, body: Any) -> float | None:
        return None

    def error_code(self, status: int, body: Any) -> ErrorCode | None:
        """The code of a non-2xx answer with this ``status`` and decoded JSON ``body`` (``None``
        when the body is not JSON or was not read), or ``None`` for the status's own: 429
        rate limited, 408 timeout, 5xx unavailable, another 4xx permanent."""
        return None
