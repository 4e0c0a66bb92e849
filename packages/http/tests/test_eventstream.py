"""The ``application/vnd.amazon.eventstream`` decoder on its own: the format's own example,
every header type, any split of a stream, any corrupted byte, the bounds, and exceptions
coded. The messages are written by ``runport.conformance.eventstream``, an encoder written
apart from the decoder."""

from __future__ import annotations

import datetime
import struct
import uuid
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance.eventstream import (
    encode_header,
    encode_message,
    event_message,
    exception_message,
)
from runport.contracts import ErrorCode
from runport.http import (
    EVENTSTREAM_MAX_MESSAGE_BYTES,
    EventStreamDecoder,
    EventStreamMessage,
    eventstream_error,
)
from runport.ports import PortError


def decode(*reads: bytes, limit: int = EVENTSTREAM_MAX_MESSAGE_BYTES) -> list[EventStreamMessage]:
    decoder = EventStreamDecoder(limit)
    messages = [message for read in reads for message in decoder.feed(read)]
    decoder.end()
    return messages


def refused(*reads: bytes, code: str = ErrorCode.RUNTIME_INVALID_RESPONSE) -> str:
    with pytest.raises(PortError) as caught:
        decode(*reads)
    assert caught.value.code == code
    return caught.value.message


def test_the_format_s_own_example_decodes() -> None:
    """AWS's example message: no headers, the payload ``{'foo':'bar'}``, both CRCs typed in."""
    body = bytes.fromhex("0000001d00000000fd528c5a") + b"{'foo':'bar'}" + bytes.fromhex("c3653936")
    assert decode(body) == [EventStreamMessage({}, b"{'foo':'bar'}")]


def test_every_header_type_decodes_to_its_value() -> None:
    when = datetime.datetime(2026, 12, 7, 18, 0, 1, 250000, tzinfo=datetime.UTC)
    ident = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
    headers = [
        encode_header("yes", "true"),
        encode_header("no", "false"),
        encode_header("b", "byte", -128),
        encode_header("s", "short", -32768),
        encode_header("i", "integer", 2**31 - 1),
        encode_header("l", "long", -(2**63)),
        encode_header("raw", "bytes", b"\x00\xff"),
        encode_header("text", "string", "grüße"),
        encode_header("when", "timestamp", when),
        encode_header("id", "uuid", ident),
    ]
    [message] = decode(encode_message(headers, b"payload"))
    assert dict(message.headers) == {
        "yes": True,
        "no": False,
        "b": -128,
        "s": -32768,
        "i": 2**31 - 1,
        "l": -(2**63),
        "raw": b"\x00\xff",
        "text": "grüße",
        "when": when,
        "id": ident,
    }
    assert message.payload == b"payload"
    assert message.message_type == "event"  # no :message-type: an event


header_values = st.one_of(
    st.tuples(st.just("true"), st.none()),
    st.tuples(st.just("false"), st.none()),
    st.tuples(st.just("byte"), st.integers(-(2**7), 2**7 - 1)),
    st.tuples(st.just("short"), st.integers(-(2**15), 2**15 - 1)),
    st.tuples(st.just("integer"), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just("long"), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("bytes"), st.binary(max_size=40)),
    st.tuples(st.just("string"), st.text(max_size=40)),
    st.tuples(st.just("timestamp"), st.integers(-(10**13), 10**13)),
    st.tuples(st.just("uuid"), st.uuids()),
)
messages = st.lists(
    st.tuples(
        st.dictionaries(st.text(min_size=1, max_size=12), header_values, max_size=5),
        st.binary(max_size=200),
    ),
    min_size=1,
    max_size=5,
)


def _stream(written: list[tuple[dict[str, tuple[str, object]], bytes]]) -> bytes:
    return b"".join(
        encode_message(
            [encode_header(name, kind, value) for name, (kind, value) in headers.items()],
            payload,
        )
        for headers, payload in written
    )


@settings(max_examples=settings.default.max_examples, deadline=None)
@given(written=messages, data=st.data())
def test_any_split_of_a_stream_decodes_the_same(
    written: list[tuple[dict[str, tuple[str, object]], bytes]], data: st.DataObject
) -> None:
    body = _stream(written)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=12)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    whole = decode(body)
    assert decode(*reads) == whole
    assert [message.payload for message in whole] == [payload for _, payload in written]
    assert [list(message.headers) for message in whole] == [list(h) for h, _ in written]


@settings(max_examples=settings.default.max_examples, deadline=None)
@given(written=messages, data=st.data())
def test_any_corrupted_byte_is_refused_or_decodes_identically(
    written: list[tuple[dict[str, tuple[str, object]], bytes]], data: st.DataObject
) -> None:
    body = bytearray(_stream(written))
    at = data.draw(st.integers(0, len(body) - 1))
    body[at] ^= data.draw(st.integers(1, 255))
    decoded = _decoded_or_code(bytes(body))
    # CRC32 catches every single-byte error: nothing but the same messages may come out
    assert decoded in (ErrorCode.RUNTIME_INVALID_RESPONSE, decode(_stream(written)))


@settings(max_examples=settings.default.max_examples, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_are_refused_with_a_code_never_a_crash(body: bytes) -> None:
    assert _decoded_or_code(body) in (ErrorCode.RUNTIME_INVALID_RESPONSE, [])


def _decoded_or_code(body: bytes) -> list[EventStreamMessage] | str:
    """The messages, or the code of the ``PortError`` that refused them (any other exception
    propagates: a crash)."""
    try:
        return decode(body)
    except PortError as error:
        return error.code


def _prelude(total: int, headers: int) -> bytes:
    lengths = struct.pack(">II", total, headers)
    return lengths + struct.pack(">I", zlib.crc32(lengths))


def test_a_message_past_the_format_s_16_mib_is_refused_from_its_prelude() -> None:
    decoder = EventStreamDecoder()
    with pytest.raises(PortError) as caught:
        decoder.feed(_prelude(EVENTSTREAM_MAX_MESSAGE_BYTES + 1, 0))  # nothing more is waited on
    assert caught.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "more than the format allows" in caught.value.message


def test_a_message_past_max_response_bytes_is_refused_from_its_prelude() -> None:
    decoder = EventStreamDecoder(4096)
    with pytest.raises(PortError) as caught:
        decoder.feed(_prelude(4097, 0))
    assert caught.value.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE


def test_a_16_mib_message_within_its_bound_is_read_whole() -> None:
    payload = b"x" * (EVENTSTREAM_MAX_MESSAGE_BYTES - 16)
    body = encode_message(b"", payload)
    assert len(body) == EVENTSTREAM_MAX_MESSAGE_BYTES
    decoder = EventStreamDecoder()
    assert decoder.feed(body[:100_000]) == []
    [message] = decoder.feed(body[100_000:])
    assert len(message.payload) == len(payload)


def test_headers_running_past_the_message_are_refused() -> None:
    good = encode_message([encode_header("a", "string", "b")], b"{}")
    total = len(good)
    lengths = struct.pack(">II", total, total - 15)  # one byte more than the room
    forged = lengths + struct.pack(">I", zlib.crc32(lengths)) + good[12:-4]
    forged += struct.pack(">I", zlib.crc32(forged))
    assert "headers run past the message" in refused(forged)


def test_a_header_value_past_its_headers_is_refused() -> None:
    header = encode_header("text", "string", "abcdef")[:-3]  # its length says 6, 3 are there
    assert "runs past its headers" in refused(encode_message(header, b""))


@pytest.mark.parametrize(
    ("header", "words"),
    [
        (b"\x01a\x0a", "unknown type"),
        (b"\x00\x00", "empty name"),
        (b"\x02\xff\xfe\x07\x00\x00", "not UTF-8"),
        (b"\x01t\x08" + struct.pack(">q", 2**62), "out of range"),
        (encode_header("a", "true") + encode_header("a", "false"), "twice"),
    ],
)
def test_malformed_headers_are_refused(header: bytes, words: str) -> None:
    assert words in refused(encode_message(header, b""))


def test_wrong_crcs_are_refused() -> None:
    body = bytearray(event_message("contentBlockDelta", {"delta": {"text": "x"}}))
    prelude, message = bytearray(body), bytearray(body)
    prelude[10] ^= 1
    message[-1] ^= 1
    assert "prelude CRC" in refused(bytes(prelude))
    assert "message's CRC" in refused(bytes(message))


def test_a_body_cut_inside_a_prelude_or_a_message_is_refused_at_its_end() -> None:
    body = event_message("messageStop", {"stopReason": "end_turn"})
    assert "inside a prelude" in refused(body, body[:7])
    assert "inside a message" in refused(body[:-1])


def test_a_message_shorter_than_a_prelude_and_crc_is_refused() -> None:
    assert "fewer than a prelude" in refused(_prelude(15, 0) + b"\x00" * 3)


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("throttlingException", ErrorCode.RUNTIME_RATE_LIMITED),
        ("modelStreamErrorException", ErrorCode.RUNTIME_UNAVAILABLE),
        ("internalServerException", ErrorCode.RUNTIME_UNAVAILABLE),
        ("serviceUnavailableException", ErrorCode.RUNTIME_UNAVAILABLE),
        ("modelTimeoutException", ErrorCode.RUNTIME_TIMEOUT),
        ("validationException", ErrorCode.RUNTIME_PERMANENT),
        ("SomeOverloadedException", ErrorCode.RUNTIME_UNAVAILABLE),
        ("SomethingElse", ErrorCode.RUNTIME_PERMANENT),
    ],
)
def test_exception_messages_are_coded(name: str, code: str) -> None:
    [message] = decode(exception_message(name, "the model said no; key sk-live-0123456789abcd"))
    error = eventstream_error(message, ("0123456789",))
    assert error is not None
    assert error.code == code
    assert "the model said no" in error.message
    assert "0123456789" not in error.message


def test_error_messages_and_unknown_message_types_are_coded() -> None:
    error = encode_message(
        [
            encode_header(":message-type", "string", "error"),
            encode_header(":error-code", "string", "InternalFailure"),
            encode_header(":error-message", "string", "it broke"),
        ],
        b"",
    )
    [message] = decode(error)
    failure = eventstream_error(message)
    assert failure is not None
    assert failure.code == ErrorCode.RUNTIME_UNAVAILABLE
    assert failure.message.endswith("it broke")
    odd = encode_message([encode_header(":message-type", "string", "gossip")], b"")
    [message] = decode(odd)
    failure = eventstream_error(message)
    assert failure is not None
    assert failure.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    [event] = decode(event_message("metadata", {}))
    assert eventstream_error(event) is None
    assert event.event_type == "metadata"
