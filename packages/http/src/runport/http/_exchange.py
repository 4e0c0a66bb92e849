"""One call's HTTP exchange, minus the I/O: what both drivers share (ADR 0012).

The sync and async drivers differ only in how they send and read. Everything else — the
bounds, the deadline, the request timeout, the response head's checks, decompression inside
the bound, feeding the codec, what a transport failure means at each point, the provider's
error text — lives here once, so the two flavours cannot drift apart.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, Final

import httpx

from runport.contracts import ErrorCode, ExecutionReceipt, ExecutionRequest, StreamEvent
from runport.http._codec import Codec, ResponseDecoder
from runport.http._errors import provider_text, status_error, transport_error
from runport.http._urls import redact_url
from runport.ports import PortError, deadline_for, max_response_bytes_for

ERROR_BODY_LIMIT: Final = 64 * 1024
"""Bytes of a non-2xx body read in search of the provider's structured error message."""

BASE_HEADERS: Final = {"Accept-Encoding": "identity"}

log = logging.getLogger("runport.http")


def too_large(limit: int) -> PortError:
    return PortError(
        ErrorCode.RUNTIME_RESPONSE_TOO_LARGE,
        f"the response passed max_response_bytes ({limit} bytes)",
    )


class _Inflater:
    """gzip or deflate undone a slice at a time, never producing more than the room left.

    A gzip body may be several members one after another (RFC 1952 §2.2): every member is
    read, and what they produce together is what counts against the room. A ``deflate`` body
    is one zlib stream; bytes after its end are refused, not dropped. ``taken`` counts the
    compressed bytes fed, so a body of members that produce nothing is bounded too.
    """

    __slots__ = ("_gzip", "_z", "taken")

    def __init__(self, encoding: str) -> None:
        self._gzip = encoding in ("gzip", "x-gzip")
        self._z = self._fresh()
        self.taken = 0

    def _fresh(self) -> Any:
        return zlib.decompressobj(31 if self._gzip else 15)

    def feed(self, data: bytes, room: int) -> bytes | None:
        """The decompressed bytes, or ``None`` when they would pass ``room``."""
        self.taken += len(data)
        pieces: list[bytes] = []
        produced = 0
        try:
            while data:
                if self._z.eof:
                    if not self._gzip:
                        raise undecodable("the upstream sent bytes after its deflate body ended")
                    self._z = self._fresh()  # the next gzip member
                piece = self._z.decompress(data, room - produced + 1)
                produced += len(piece)
                if produced > room:
                    return None
                pieces.append(piece)
                # At a member's end the rest of the input is ``unused_data``; before it, the
                # input the output bound held back is ``unconsumed_tail``.
                data = self._z.unused_data if self._z.eof else self._z.unconsumed_tail
        except zlib.error:
            raise undecodable("the upstream's body could not be decoded") from None
        return b"".join(pieces)

    @property
    def whole(self) -> bool:
        """Whether what was fed ends where a member (or the zlib stream) ends."""
        return self.taken == 0 or bool(self._z.eof)


def undecodable(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)


class Exchange:
    """The state of one call between the driver's reads."""

    __slots__ = (
        "_inflater",
        "codec",
        "deadline_s",
        "decoder",
        "expires",
        "limit",
        "reads",
        "received",
        "request",
        "secrets",
        "stopped",
        "stream",
        "target",
    )

    def __init__(
        self,
        codec: Codec,
        request: ExecutionRequest,
        *,
        stream: bool,
        max_response_bytes: int | None,
        deadline: float | None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.codec = codec
        self.secrets = (*codec.secrets, *secrets)
        self.request = request
        self.stream = stream
        self.limit = max_response_bytes_for(request, max_response_bytes)
        self.deadline_s = deadline_for(request, deadline)
        self.expires = time.monotonic() + self.deadline_s
        self.received = 0
        self.reads = 0
        self.target = ""
        self.stopped = False
        self.decoder: ResponseDecoder | None = None
        self._inflater: _Inflater | None = None

    # -- before the response -------------------------------------------------------------------

    def remaining(self) -> float:
        return self.expires - time.monotonic()

    def timeouts(self, base: httpx.Timeout) -> dict[str, float]:
        """``base`` with every phase cut to the time left, so no single wait outlasts the
        deadline by more than the time left when it began: the request's ``timeout``
        extension, as ``httpx.Timeout.as_dict`` spells it."""
        left = max(self.remaining(), 0.001)
        connect, read, write, pool = base.connect, base.read, base.write, base.pool
        return {
            "connect": left if connect is None or connect > left else connect,
            "read": left if read is None or read > left else read,
            "write": left if write is None or write > left else write,
            "pool": left if pool is None or pool > left else pool,
        }

    def passed(self) -> PortError:
        return PortError(
            ErrorCode.RUNTIME_TIMEOUT, f"the call passed its deadline ({self.deadline_s:g} s)"
        )

    def check_deadline(self) -> None:
        if time.monotonic() > self.expires:
            raise self.passed()

    # -- the wire log: once per step of a call, never a body, a header or a credential --------

    def sending(self, request: httpx.Request) -> None:
        if log.isEnabledFor(logging.DEBUG):
            self.target = f"{request.method} {redact_url(request.url)}"
            log.debug("%s: sending (%s)", self.target, "streamed" if self.stream else "unstreamed")

    def closed(self, response: httpx.Response) -> None:
        """The call's one summary: status, and the body's bytes and reads (counted as they
        came, logged here so the read loop does no logging work)."""
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "%s: status %d, read %d bytes in %d reads",
                self.target,
                response.status_code,
                self.received,
                self.reads,
            )

    # -- the response --------------------------------------------------------------------------

    def head(self, response: httpx.Response) -> bool:
        """Check a response's head; ``True`` when it is a success whose body the codec reads,
        ``False`` when it is an error whose (bounded) body goes to ``error``."""
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            self._inflater = _Inflater(encoding)
        elif encoding not in ("", "identity"):
            raise PortError(
                ErrorCode.RUNTIME_INVALID_RESPONSE,
                "the upstream sent a body in an encoding it was not asked for",
            )
        if not 200 <= response.status_code <= 299:
            return False
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and self._inflater is None and int(declared) > self.limit:
            raise too_large(self.limit)
        media_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        self.decoder = self.codec.decoder(self.request, stream=self.stream, media_type=media_type)
        return True

    def feed(self, raw: bytes) -> Iterator[StreamEvent]:
        """One network read of a success body: bounded, past the deadline or not, decoded.
        The checks raise here; the codec's own failures while the events are drawn."""
        if time.monotonic() > self.expires:
            if self.decoder is not None and self.decoder.complete:
                self.stopped = True  # whole, and out of time for the usage that may follow
                return iter(())
            raise self.passed()
        data = self._bounded(raw)
        assert self.decoder is not None
        try:
            return iter(self.decoder.feed(data))
        except RecursionError:
            raise too_deep() from None

    def _bounded(self, raw: bytes) -> bytes:
        inflater = self._inflater
        if inflater is not None:
            inflated = inflater.feed(raw, self.limit - self.received)
            if inflated is None or inflater.taken > self.limit:
                raise too_large(self.limit)
            raw = inflated
        self.received += len(raw)
        self.reads += 1
        if self.received > self.limit:
            raise too_large(self.limit)
        return raw

    @property
    def finished(self) -> bool:
        decoder = self.decoder
        return decoder is not None and decoder.finished

    def drained(self, raw: bytes) -> bool:
        """One read of what follows ``finished``: read on, so the connection goes back to the
        pool, unless the bound or the deadline says stop (``True``: close instead)."""
        self.received += len(raw)
        return self.received > self.limit or time.monotonic() > self.expires

    def end(self) -> Iterator[StreamEvent]:
        """The body ended cleanly: the events its end completes (drawn lazily, so a codec
        that fails here fails where the drivers draw events)."""
        assert self.decoder is not None
        if self._inflater is not None and not self._inflater.whole:
            raise PortError(
                ErrorCode.RUNTIME_STREAM_TRUNCATED,
                "the upstream's compressed body ended partway through",
            )
        yield from self.decoder.end()

    def receipt(self) -> ExecutionReceipt | PortError:
        """The receipt, or the failure that stands in its place (returned, not raised: the
        drivers tell the upstream's failures from a sink's exceptions by where they come)."""
        assert self.decoder is not None
        try:
            return self.decoder.receipt()
        except PortError as error:
            return error
        except RecursionError:
            return too_deep()

    def interrupted(self, error: httpx.HTTPError | None) -> ExecutionReceipt | PortError:
        """A transport failure (``None``: the deadline) while reading the body. After the
        completion marker the answer is whole, so it completes; before, it fails."""
        if self.decoder is not None and self.decoder.complete:
            log.warning(
                "%s: the transport failed after the answer was complete (%s); keeping it",
                self.target or "a call",
                "deadline" if error is None else type(error).__name__,
            )
            return self.receipt()
        if error is None or (
            isinstance(error, httpx.TimeoutException) and time.monotonic() > self.expires
        ):
            return self.passed()
        return transport_error(error)

    def failed_to_send(self, error: httpx.HTTPError | PortError) -> PortError:
        """Nothing came back: the transport failed, or the adapter's ``auth`` could not sign
        the request (its ``PortError`` is the call's failure as it is)."""
        if isinstance(error, PortError):
            log.debug("%s: not sent, %s (the request's auth)", self.target, error.code)
            return error
        failure = (
            self.passed()
            if isinstance(error, httpx.TimeoutException) and time.monotonic() > self.expires
            else transport_error(error)
        )
        log.debug("%s: not sent, %s (%s)", self.target, failure.code, type(error).__name__)
        failure.__cause__ = error
        return failure

    # -- between two reads of a success body ---------------------------------------------------

    def take(self, raw: bytes | None) -> Iterator[StreamEvent]:
        """The events of one read of a success body (``None``: the body ended cleanly). Every
        failure, the bound's and the deadline's as the codec's, comes while they are drawn,
        so the drivers tell it from a sink's exception in one place (``codec_failure``)."""
        if raw is None:
            return self.end()
        try:
            return self.feed(raw)
        except PortError as error:
            return _failing(error)

    def settled(self, raw: bytes | None) -> bool:
        """Whether the call has its outcome once the events of ``raw`` are delivered: the body
        ended, the deadline stopped a whole answer, or the decoder finished (then what follows
        is drained first, see ``drains``)."""
        return raw is None or self.stopped or self.finished

    def drains(self, raw: bytes | None) -> bool:
        """Whether a settled call reads on to the body's end before its receipt, so the
        connection goes back to the pool."""
        return raw is not None and not self.stopped

    # -- an error response ---------------------------------------------------------------------

    def error(self, response: httpx.Response, body: bytes | None) -> PortError:
        """The ``PortError`` for a non-2xx response; ``body`` is what could be read of it
        (``None`` when reading it failed)."""
        text = hint = decoded = None
        if body:
            decoded = _loads(body)
            text = provider_text(self.codec.error_text(decoded), self.secrets)
            hint = self.codec.retry_after_ms(decoded)
        code = self.codec.error_code(response.status_code, decoded)
        return status_error(
            response.status_code, response.headers, text, body_retry_after_ms=hint, code=code
        )

    def body_reads(self, response: httpx.Response) -> Iterator[bytes]:
        """The sync driver's reads of the body as sent: the network's, or, for a response
        httpx read already (an ``httpx.MockTransport`` answer built from bytes), its content —
        the bytes as sent, read again, when they are compressed: httpx's own decoding keeps
        only a gzip body's first member."""
        if not response.is_stream_consumed:
            return response.iter_raw()
        if self._inflater is None:
            return iter((response.content,))
        return _sent_again(response.stream)

    def abody_reads(self, response: httpx.Response) -> AsyncIterator[bytes]:
        """``body_reads`` for the async driver."""
        if not response.is_stream_consumed:
            return response.aiter_raw()
        if self._inflater is None:
            return _once(response.content)
        return _asent_again(response.stream)

    def error_room(self) -> int:
        return min(self.limit, ERROR_BODY_LIMIT)

    def error_body(self) -> ErrorBody:
        """What the drivers gather a non-2xx body in, read by read."""
        return ErrorBody(self.error_room(), self._inflater)


class ErrorBody:
    """A non-2xx body, decompressed, gathered up to the error bound."""

    __slots__ = ("_inflater", "_pieces", "_room")

    def __init__(self, room: int, inflater: _Inflater | None) -> None:
        self._room = room
        self._inflater = inflater
        self._pieces: list[bytes] = []

    def add(self, raw: bytes) -> bool:
        """Take one read; ``False`` once the bound is passed (the body is then unread)."""
        if self._inflater is not None:
            inflated = self._inflater.feed(raw, self._room)
            if inflated is None:
                return False
            raw = inflated
        if len(raw) > self._room:
            return False
        self._room -= len(raw)
        self._pieces.append(raw)
        return True

    def body(self) -> bytes:
        return b"".join(self._pieces)


def _read_already() -> httpx.DecodingError:
    return httpx.DecodingError("the compressed body was read before it reached the adapter")


def _sent_again(stream: httpx.SyncByteStream | httpx.AsyncByteStream) -> Iterator[bytes]:
    """A stream httpx read already, read again (its bytes as sent); a stream that cannot be
    is a body that cannot be decoded."""
    if not isinstance(stream, httpx.SyncByteStream):
        raise _read_already()
    try:
        yield from stream
    except httpx.StreamError:
        raise _read_already() from None


async def _asent_again(
    stream: httpx.SyncByteStream | httpx.AsyncByteStream,
) -> AsyncIterator[bytes]:
    if not isinstance(stream, httpx.AsyncByteStream):
        raise _read_already()
    try:
        async for piece in stream:
            yield piece
    except httpx.StreamError:
        raise _read_already() from None


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


def codec_failure(error: PortError | RecursionError, events: Iterator[StreamEvent]) -> PortError:
    """The failure an exception that left a delivery loop stands for when the codec's events
    raised it; when the sink raised it, the same exception again (it propagates as it is). A
    generator that raised is finished (no frame); a sink raising leaves the generator
    suspended at its ``yield``; a list's iterator never raises."""
    if not (inspect.isgenerator(events) and events.gi_frame is None):
        raise error  # the sink's own
    return error if isinstance(error, PortError) else too_deep()


def _failing(error: PortError) -> Iterator[StreamEvent]:
    yield from ()
    raise error


def too_deep() -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "the upstream's JSON nests too deeply")


def _loads(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None
