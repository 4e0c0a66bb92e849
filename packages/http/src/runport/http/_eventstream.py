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
from dataclasses import dataclass
from typing import Final, TypeAlias

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
_LENGTHS: Final = struct.Struct(">II")
_CRC: Final = struct.Struct(">I")
_SHORT: Final = struct.Struct(">H")
_INTEGERS: Final = {2: struct.Struct(">b"), 3: struct.Struct(">h"), 4: struct.Struct(">i")}
_LONG: Final = struct.Struct(">q")
_MINIMUM: Final = _PRELUDE.size + _CRC.size
_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

HeaderValue: TypeAlias = bool | int | bytes | str | datetime.datetime | uuid.UUID
"""A header's value as its type byte says: ``bool``, ``int`` (any of the four widths),
``bytes``, ``str``, ``datetime`` (UTC) or ``UUID``."""


def _invalid(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)


@dataclass(frozen=True, slots=True)
class EventStreamMessage:
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
    """

    __slots__ = ("_buffer", "_limit")

    def __init__(self, max_message_bytes: int = EVENTSTREAM_MAX_MESSAGE_BYTES) -> None:
        if type(max_message_bytes) is not int or max_message_bytes < 0:
            raise ValueError("max_message_bytes must be a non-negative int")
        self._limit = min(max_message_bytes, EVENTSTREAM_MAX_MESSAGE_BYTES)
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[EventStreamMessage]:
        buffer = self._buffer
        buffer += data
        messages: list[EventStreamMessage] = []
        position = 0
        available = len(buffer)
        while available - position >= _PRELUDE.size:
            total, headers_length = self._prelude(buffer, position)
            if available - position < total:
                break
            messages.append(
                _message(memoryview(buffer)[position : position + total], headers_length)
            )
            position += total
        if position:
            del buffer[:position]
        return messages

    def end(self) -> None:
        """The body ended: bytes of a message left unfinished are an invalid response."""
        if self._buffer:
            held = len(self._buffer)
            self._buffer.clear()
            where = "prelude" if held < _PRELUDE.size else "message"
            raise _invalid(f"the eventstream body ended inside a {where} ({held} bytes held)")

    def _prelude(self, buffer: bytearray, position: int) -> tuple[int, int]:
        total, headers_length, crc = _PRELUDE.unpack_from(buffer, position)
        if zlib.crc32(memoryview(buffer)[position : position + 8]) != crc:
            raise _invalid("an eventstream message's prelude CRC does not match")
        if total < _MINIMUM:
            raise _invalid(f"an eventstream message declares {total} bytes, fewer than a prelude")
        if total > self._limit:
            if total > EVENTSTREAM_MAX_MESSAGE_BYTES:
                raise _invalid(
                    f"an eventstream message declares {total} bytes, more than the format "
                    f"allows ({EVENTSTREAM_MAX_MESSAGE_BYTES})"
                )
            raise PortError(
                ErrorCode.RUNTIME_RESPONSE_TOO_LARGE,
                f"an eventstream message declares {total} bytes, past max_response_bytes "
                f"({self._limit} bytes)",
            )
        if headers_length > total - _MINIMUM:
            raise _invalid("an eventstream message's headers run past the message")
        return total, headers_length


def _message(frame: memoryview, headers_length: int) -> EventStreamMessage:
    end = len(frame) - _CRC.size
    (crc,) = _CRC.unpack_from(frame, end)
    if zlib.crc32(frame[:end]) != crc:
        raise _invalid("an eventstream message's CRC does not match")
    start = _PRELUDE.size
    headers = _headers(frame[start : start + headers_length])
    return EventStreamMessage(headers, bytes(frame[start + headers_length : end]))


def _headers(data: memoryview) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    position, size = 0, len(data)
    try:
        while position < size:
            name_length = data[position]
            position += 1
            if name_length == 0:
                raise _invalid("an eventstream header has an empty name")
            name = bytes(data[position : position + name_length]).decode("utf-8")
            position += name_length
            kind = data[position]
            position += 1
            value: HeaderValue
            if kind <= 1:
                value = kind == 0
            elif kind in _INTEGERS:
                integer = _INTEGERS[kind]
                (value,) = integer.unpack_from(data, position)
                position += integer.size
            elif kind == 5 or kind == 8:
                (number,) = _LONG.unpack_from(data, position)
                position += _LONG.size
                value = number if kind == 5 else _EPOCH + datetime.timedelta(milliseconds=number)
            elif kind == 6 or kind == 7:
                (length,) = _SHORT.unpack_from(data, position)
                position += _SHORT.size
                raw = bytes(data[position : position + length])
                if len(raw) != length:
                    raise _invalid("an eventstream header's value runs past its headers")
                position += length
                value = raw if kind == 6 else raw.decode("utf-8")
            elif kind == 9:
                raw = bytes(data[position : position + 16])
                if len(raw) != 16:
                    raise _invalid("an eventstream header's value runs past its headers")
                position += 16
                value = uuid.UUID(bytes=raw)
            else:
                raise _invalid(f"an eventstream header has an unknown type ({kind})")
            if name in headers:
                raise _invalid(f"an eventstream message names header {name!r} twice")
            headers[name] = value
    except struct.error:
        raise _invalid("an eventstream header's value runs past its headers") from None
    except IndexError:
        raise _invalid("an eventstream header runs past its headers") from None
    except UnicodeDecodeError:
        raise _invalid("an eventstream header is not UTF-8") from None
    except OverflowError:
        raise _invalid("an eventstream timestamp header is out of range") from None
    return headers


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
        for message in self._stream.feed(data):
            failure = eventstream_error(message, self.secrets)
            if failure is not None:
                raise failure
            yield from self.completed(self.frame, message.event_type or "", message.payload)
            if self.finished:
                return

    def end(self) -> Iterable[StreamEvent]:
        self._stream.end()
        return ()

    @abstractmethod
    def frame(self, event: str, payload: bytes) -> None: ...
