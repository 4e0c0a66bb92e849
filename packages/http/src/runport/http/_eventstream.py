"""A sans-IO decoder for ``application/vnd.amazon.eventstream``, the binary framing AWS streams
answers in (Bedrock's ConverseStream and InvokeModelWithResponseStream among them;
docs/codecs.md, adr/0057-bedrock-and-the-amazon-eventstream.md).

A message is a 12-byte prelude — its total length and its headers' length (big-endian
``uint32`` each), then the CRC32 of those eight bytes — followed by the headers, the payload
and the CRC32 of everything before it. A header is its name's length (one byte), the name
(UTF-8), a type byte and a value: ``0``/``1`` true/false (no bytes), ``2``–``5`` a signed
8/16/32/64-bit integer, ``6`` bytes and ``7`` a string (each after a ``uint16`` length), ``8``
a timestamp (``int64`` milliseconds since the epoch), ``9`` a UUID (16 bytes).

The prelude's CRC is checked before its lengths are believed, so a corrupted length is refused
at once rather than waited on; a message longer than the decoder's bound is refused from its
prelude, before its bytes are read. Every malformed message is ``TQX_RUNTIME_INVALID_RESPONSE``.
"""

from __future__ import annotations

import datetime
import json
import struct
import uuid
import zlib
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Final, NamedTuple, TypeAlias

from runport.contracts import AdapterDescriptor, ErrorCode, ExecutionRequest, StreamEvent
from runport.http._decoders import TurnDecoder
from runport.http._errors import error_from_words, provider_text
from runport.ports import PortError, max_response_bytes_for

__all__ = [
    "EVENTSTREAM_MAX_MESSAGE_BYTES",
    "EventStreamDecoder",
    "EventStreamMessage",
    "EventStreamTurnDecoder",
    "HeaderValue",
    "eventstream_error",
]

EVENTSTREAM_MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
"""The longest message the format allows (16 MiB), and a decoder's bound unless given less."""

_PRELUDE: Final = struct.Struct(">III")
_PRELUDE_UNPACK: Final = _PRELUDE.unpack_from
_CRC: Final = struct.Struct(">I")
_CRC_UNPACK: Final = _CRC.unpack_from
_WIDTHS: Final = {2: 1, 3: 2, 4: 4, 5: 8, 8: 8}
_crc32: Final = zlib.crc32
_KNOWN_BLOCKS: Final = 32
"""Distinct header blocks a decoder keeps decoded (a stream has one per event type)."""
_MINIMUM: Final = _PRELUDE.size + _CRC.size
_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

HeaderValue: TypeAlias = bool | int | bytes | str | datetime.datetime | uuid.UUID
"""A header's value as its type byte says: ``bool``, ``int`` (any of the four widths),
``bytes``, ``str``, ``datetime`` (UTC) or ``UUID``."""


def _invalid(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)


class EventStreamMessage(NamedTuple):
    """One decoded message: its headers by name, in order, and its payload."""

    headers: Mapping[str, HeaderValue]
    payload: bytes

    def header(self, name: str) -> str | None:
        """A string header's value (``None`` when absent or not a string)."""
        value = self.headers.get(name)
        return value if type(value) is str else None

    @property
    def message_type(self) -> str:
        """``:message-type``: ``event``, ``exception`` or ``error`` (``event`` when absent)."""
        return self.header(":message-type") or "event"

    @property
    def event_type(self) -> str | None:
        """``:event-type``: which event an ``event`` message is."""
        return self.header(":event-type")


class EventStreamDecoder:
    """Feed it a body's reads in order; each ``feed`` returns the messages those bytes
    completed, and ``end`` refuses a body that stopped inside a message.

    ``max_message_bytes`` bounds one message (pass the call's ``max_response_bytes``): a
    prelude that declares more is refused before any of its bytes are held, as
    ``TQX_RUNTIME_RESPONSE_TOO_LARGE``; one past the format's own 16 MiB as an invalid
    response.

    Linear in the body whatever its reads: a message that spans reads is held as a list of
    pieces, joined once, when its last byte has arrived (its prelude says when). A header
    block seen before is not decoded again: the messages share its (read-only) headers.
    """

    __slots__ = ("_held", "_known", "_limit", "_needed", "_size")

    def __init__(self, max_message_bytes: int = EVENTSTREAM_MAX_MESSAGE_BYTES) -> None:
        if type(max_message_bytes) is not int or max_message_bytes < 0:
            raise ValueError("max_message_bytes must be a non-negative int")
        self._limit = min(max_message_bytes, EVENTSTREAM_MAX_MESSAGE_BYTES)
        self._held: list[bytes] = []
        self._size = 0  # bytes held
        self._needed = _PRELUDE.size  # bytes the held message needs before it can be read
        # A stream repeats a few header blocks (one per event type): each is decoded once.
        self._known: dict[bytes, Mapping[str, HeaderValue]] = {}

    def feed(self, data: bytes) -> list[EventStreamMessage]:
        held = self._held
        if held:
            held.append(data)
            self._size += len(data)
            if self._size < self._needed:
                return []
            data = b"".join(held)
            held.clear()
            self._size = 0
        messages: list[EventStreamMessage] = []
        position, available = 0, len(data)
        needed = _PRELUDE.size
        known = self._known
        view = memoryview(data)
        try:
            while available - position >= _PRELUDE.size:
                total, headers_length, crc = _PRELUDE_UNPACK(data, position)
                if _crc32(view[position : position + 8]) != crc:
                    raise _invalid("an eventstream message's prelude CRC does not match")
                if total > self._limit or total < _MINIMUM or headers_length > total - _MINIMUM:
                    raise self._refused(total)
                end = position + total
                if end > available:
                    needed = total
                    break
                body_end = end - _CRC.size
                if _crc32(view[position:body_end]) != _CRC_UNPACK(data, body_end)[0]:
                    raise _invalid("an eventstream message's CRC does not match")
                start = position + _PRELUDE.size
                payload_start = start + headers_length
                block = data[start:payload_start]
                headers = known.get(block)
                if headers is None:
                    headers = MappingProxyType(_headers(block, 0, headers_length))
                    if len(known) < _KNOWN_BLOCKS:
                        known[block] = headers
                messages.append(EventStreamMessage(headers, data[payload_start:body_end]))
                position = end
        finally:
            view.release()
        if position < available:
            held.append(data[position:])
            self._size = available - position
            self._needed = needed
        return messages

    def end(self) -> None:
        """The body ended: bytes of a message left unfinished are an invalid response."""
        if self._held:
            held = self._size
            self._held.clear()
            self._size = 0
            where = "prelude" if held < _PRELUDE.size else "message"
            raise _invalid(f"the eventstream body ended inside a {where} ({held} bytes held)")

    def _refused(self, total: int) -> PortError:
        if total < _MINIMUM:
            return _invalid(f"an eventstream message declares {total} bytes, fewer than a prelude")
        if total > EVENTSTREAM_MAX_MESSAGE_BYTES:
            return _invalid(
                f"an eventstream message declares {total} bytes, more than the format "
                f"allows ({EVENTSTREAM_MAX_MESSAGE_BYTES})"
            )
        if total > self._limit:
            return PortError(
                ErrorCode.RUNTIME_RESPONSE_TOO_LARGE,
                f"an eventstream message declares {total} bytes, past max_response_bytes "
                f"({self._limit} bytes)",
            )
        return _invalid("an eventstream message's headers run past the message")


def _headers(data: bytes, position: int, end: int) -> dict[str, HeaderValue]:
    """The headers in ``data[position:end]``; strings (the usual type) first."""
    headers: dict[str, HeaderValue] = {}
    try:
        while position < end:
            name_end = position + 1 + data[position]
            if name_end == position + 1:
                raise _invalid("an eventstream header has an empty name")
            if name_end >= end:
                raise _past()
            name = data[position + 1 : name_end].decode("utf-8")
            kind = data[name_end]
            position = name_end + 1
            value: HeaderValue
            if kind == 7 or kind == 6:
                value_end = position + 2 + ((data[position] << 8) | data[position + 1])
                if position + 2 > end or value_end > end:
                    raise _past()
                raw = data[position + 2 : value_end]
                value = raw.decode("utf-8") if kind == 7 else raw
                position = value_end
            elif kind <= 1:
                value = kind == 0
            elif kind <= 5 or kind == 8:
                width = _WIDTHS[kind]
                if position + width > end:
                    raise _past()
                value = int.from_bytes(data[position : position + width], "big", signed=True)
                position += width
                if kind == 8:
                    value = _EPOCH + datetime.timedelta(milliseconds=value)
            elif kind == 9:
                if position + 16 > end:
                    raise _past()
                value = uuid.UUID(bytes=data[position : position + 16])
                position += 16
            else:
                raise _invalid(f"an eventstream header has an unknown type ({kind})")
            if name in headers:
                raise _invalid(f"an eventstream message names header {name!r} twice")
            headers[name] = value
    except IndexError:
        raise _past() from None
    except UnicodeDecodeError:
        raise _invalid("an eventstream header is not UTF-8") from None
    except OverflowError:
        raise _invalid("an eventstream timestamp header is out of range") from None
    return headers


def _past() -> PortError:
    return _invalid("an eventstream header's value runs past its headers")


_EXCEPTIONS: Final = {
    "throttlingexception": ErrorCode.RUNTIME_RATE_LIMITED,
    "toomanyrequestsexception": ErrorCode.RUNTIME_RATE_LIMITED,
    "servicequotaexceededexception": ErrorCode.RUNTIME_RATE_LIMITED,
    "modelstreamerrorexception": ErrorCode.RUNTIME_UNAVAILABLE,
    "internalserverexception": ErrorCode.RUNTIME_UNAVAILABLE,
    "serviceunavailableexception": ErrorCode.RUNTIME_UNAVAILABLE,
    "modelnotreadyexception": ErrorCode.RUNTIME_UNAVAILABLE,
    "modeltimeoutexception": ErrorCode.RUNTIME_TIMEOUT,
    "validationexception": ErrorCode.RUNTIME_PERMANENT,
    "accessdeniedexception": ErrorCode.RUNTIME_PERMANENT,
    "resourcenotfoundexception": ErrorCode.RUNTIME_PERMANENT,
    "modelerrorexception": ErrorCode.RUNTIME_PERMANENT,
}
"""AWS's exception names (any case) and the code each is; others are classified by their
words, as any provider's error frame is."""


def eventstream_error(message: EventStreamMessage, secrets: Iterable[str] = ()) -> PortError | None:
    """The ``PortError`` an ``exception`` or ``error`` message stands for (``None`` for an
    event). An exception names itself in ``:exception-type`` and carries
    ``{"message": …}`` as its payload; an error carries ``:error-code`` and
    ``:error-message``. Only the provider's message reaches ``PortError.message``, through
    ``provider_text``."""
    kind = message.message_type
    if kind == "event":
        return None
    if kind == "exception":
        name = message.header(":exception-type") or "an unnamed exception"
        text = provider_text(_payload_message(message.payload), secrets)
    elif kind == "error":
        name = message.header(":error-code") or "an unnamed error"
        text = provider_text(message.header(":error-message"), secrets)
    else:
        return _invalid(f"an eventstream message has an unknown :message-type ({kind[:40]!r})")
    shown = provider_text(name) or "an exception"
    code = _EXCEPTIONS.get(name.lower()) or error_from_words([name]).code
    detail = f"the upstream sent {shown}" + ("" if text is None else f": {text}")
    return PortError(code, detail)


def _payload_message(payload: bytes) -> str | None:
    try:
        body = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if type(body) is dict:
        for key in ("message", "Message"):
            if type(body.get(key)) is str:
                return str(body[key])
    return None


class EventStreamTurnDecoder(TurnDecoder):
    """A codec's decoder for an eventstream answer: ``frame`` is handed each ``event``
    message's ``:event-type`` and payload, in order, and sets ``complete`` as the protocol
    says; an ``exception`` or ``error`` message fails the call with its code
    (``eventstream_error``) after the events before it reached the caller. A message is
    bounded by the request's ``max_response_bytes``, and a body that ends inside one is an
    invalid response.
    """

    def __init__(
        self, request: ExecutionRequest, adapter: AdapterDescriptor, secrets: tuple[str, ...] = ()
    ) -> None:
        self._stream = EventStreamDecoder(max_response_bytes_for(request, None))
        super().__init__(request, adapter, secrets)

    def feed(self, data: bytes) -> Iterator[StreamEvent]:
        for headers, payload in self._stream.feed(data):
            kind = headers.get(":message-type", "event")
            if kind != "event":
                failure = eventstream_error(EventStreamMessage(headers, payload), self.secrets)
                raise failure or _invalid("an eventstream message's :message-type is no string")
            event = headers.get(":event-type")
            yield from self.completed(self.frame, event if type(event) is str else "", payload)
            if self.finished:
                return

    def end(self) -> Iterable[StreamEvent]:
        self._stream.end()
        return ()

    @abstractmethod
    def frame(self, event: str, payload: bytes) -> None: ...
