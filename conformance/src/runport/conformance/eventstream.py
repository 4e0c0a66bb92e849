"""``application/vnd.amazon.eventstream`` messages written byte by byte, for upstreams that
speak it (the ``bedrock-converse`` protocol, an author's emulation, a decoder's tests).

Written here from the format's description, apart from any decoder (runport.http's
included), so a test that feeds these bytes to a decoder checks one reading against another.
A message: total length and headers length (``uint32`` big-endian), the CRC32 of those eight
bytes, the headers, the payload, the CRC32 of everything before it. A header: name length
(one byte), name, type byte, value.
"""

from __future__ import annotations

import datetime
import json
import struct
import uuid
import zlib
from collections.abc import Sequence
from typing import Any, Final

__all__ = [
    "HEADER_TYPES",
    "encode_header",
    "encode_message",
    "event_message",
    "exception_message",
]

HEADER_TYPES: Final = {
    "true": 0,
    "false": 1,
    "byte": 2,
    "short": 3,
    "integer": 4,
    "long": 5,
    "bytes": 6,
    "string": 7,
    "timestamp": 8,
    "uuid": 9,
}
"""Each header value type's name and its type byte."""

_WIDTHS: Final = {"byte": ">b", "short": ">h", "integer": ">i", "long": ">q"}


def encode_header(name: str, kind: str, value: Any = None) -> bytes:
    """One header: ``kind`` is a name in ``HEADER_TYPES`` (``value`` unused for ``true`` and
    ``false``; an ``int`` for the integers, ``bytes``, ``str``, a UTC ``datetime`` or an
    ``int`` of milliseconds for ``timestamp``, a ``UUID``)."""
    encoded = name.encode("utf-8")
    out = bytes([len(encoded)]) + encoded + bytes([HEADER_TYPES[kind]])
    if kind in ("true", "false"):
        return out
    if kind in _WIDTHS:
        return out + struct.pack(_WIDTHS[kind], value)
    if kind in ("bytes", "string"):
        raw = value.encode("utf-8") if kind == "string" else bytes(value)
        return out + struct.pack(">H", len(raw)) + raw
    if kind == "timestamp":
        if isinstance(value, datetime.datetime):
            epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
            value = (value - epoch) // datetime.timedelta(milliseconds=1)
        return out + struct.pack(">q", value)
    assert isinstance(value, uuid.UUID)
    return out + value.bytes


def encode_message(headers: Sequence[bytes] | bytes, payload: bytes) -> bytes:
    """A whole message from its encoded headers (``encode_header``'s, in order) and payload."""
    block = headers if isinstance(headers, bytes) else b"".join(headers)
    total = 12 + len(block) + len(payload) + 4
    lengths = struct.pack(">II", total, len(block))
    prelude = lengths + struct.pack(">I", zlib.crc32(lengths))
    body = prelude + block + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event_message(event_type: str, payload: Any) -> bytes:
    """An AWS ``event`` message as services send it: ``:event-type``, ``:content-type``
    ``application/json`` and ``:message-type`` ``event``, the payload as compact JSON."""
    return encode_message(
        [
            encode_header(":event-type", "string", event_type),
            encode_header(":content-type", "string", "application/json"),
            encode_header(":message-type", "string", "event"),
        ],
        json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
    )


def exception_message(exception_type: str, message: str, **extra: Any) -> bytes:
    """An AWS ``exception`` message: ``:exception-type`` names it, the payload is
    ``{"message": …}`` (and ``extra``'s fields beside it)."""
    return encode_message(
        [
            encode_header(":exception-type", "string", exception_type),
            encode_header(":content-type", "string", "application/json"),
            encode_header(":message-type", "string", "exception"),
        ],
        json.dumps({"message": message, **extra}, ensure_ascii=False).encode("utf-8"),
    )
