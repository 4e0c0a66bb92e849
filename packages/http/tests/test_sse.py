"""The event-stream decoder on its own: the WHATWG rules, and any split of the bytes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.http import ServerSentEvent, SSEDecoder


def decode(*reads: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    return [event for read in reads for event in decoder.feed(read)] + decoder.end()


def test_one_event_per_blank_line() -> None:
    assert decode(b"data: a\n\ndata:b\n\n") == [("message", b"a"), ("message", b"b")]


def test_only_one_space_is_dropped() -> None:
    assert decode(b"data:  two\n\n") == [("message", b" two")]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert decode(b"data: a\ndata\ndata: c\n\n") == [("message", b"a\n\nc")]


def test_comments_ids_retries_and_unknown_fields_are_ignored() -> None:
    body = b": ping\nid: 1\nretry: 10\nfoo: bar\ndata: x\n\n:\n\n"
    assert decode(body) == [("message", b"x")]


def test_event_type_applies_to_its_own_event_only() -> None:
    body = b"event: error\ndata: e\n\ndata: m\n\nevent: ping\n\n"
    assert decode(body) == [("error", b"e"), ("message", b"m")]


def test_an_event_without_its_blank_line_is_not_dispatched() -> None:
    assert decode(b"data: a\n\ndata: [DONE]\n") == [("message", b"a")]
    assert decode(b"data: [DONE]") == []


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_line_endings(newline: bytes) -> None:
    body = b"data: a" + newline + newline + b": c" + newline + b"data: b" + newline * 2
    assert decode(body) == [("message", b"a"), ("message", b"b")]


def test_crlf_split_between_reads_is_one_line_end() -> None:
    assert decode(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == [
        ("message", b"a"),
        ("message", b"b"),
    ]


def test_a_leading_bom_is_dropped_even_when_split() -> None:
    assert decode(b"\xef", b"\xbb", b"\xbfdata: a\n\n") == [("message", b"a")]
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n") == []  # only the first BOM


def test_empty_reads_change_nothing() -> None:
    assert decode(b"", b"data: a", b"", b"\n", b"", b"\n") == [("message", b"a")]


lines = st.lists(
    st.sampled_from(
        [
            b'data: {"a": "h\xc3\xa9llo \xf0\x9f\x8c\x8d"}',
            b"data:x",
            b"data",
            b": keep-alive",
            b"event: error",
            b"id: 3",
            b"",
            b"",
            b"data: [DONE]",
        ]
    ),
    max_size=25,
)


@settings(deadline=None)
@given(
    lines=lines,
    newline=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    bom=st.booleans(),
    data=st.data(),
)
def test_any_split_of_the_bytes_gives_the_same_events(
    lines: list[bytes], newline: bytes, bom: bool, data: st.DataObject
) -> None:
    body = (b"\xef\xbb\xbf" if bom else b"") + b"".join(line + newline for line in lines)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(body)), max_size=12)))
    reads = [body[a:b] for a, b in itertools.pairwise([0, *cuts, len(body)])]
    assert decode(*reads) == decode(body)
    assert decode(*(body[i : i + 1] for i in range(len(body)))) == decode(body)


# --- linear in the body's size, whatever the line endings ------------------------------------


def test_a_4_mib_crlf_frame_read_in_1_kib_pieces_decodes_whole() -> None:
    """Issue 13's regression: once a CR had been seen, every read re-joined and re-split the
    whole held line (about 12 s for this body); now each read is touched once."""
    payload = b"x" * (4 * 1024 * 1024)
    body = b"data: " + payload + b"\r\n\r\n"
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for start in range(0, len(body), 1024):
        events += decoder.feed(body[start : start + 1024])
    assert events == [("message", payload)]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_a_line_spanning_reads_is_held_as_pieces_not_rejoined(newline: bytes) -> None:
    """The work per read is the read's own size: a line that spans n reads is held as n
    pieces (joined once, when its end arrives) rather than copied on every read."""
    decoder = SSEDecoder()
    decoder.feed(b": seen" + newline + b"data: ")  # this line ending has now been seen
    for _ in range(50):
        assert decoder.feed(b"y" * 100) == []
    assert len(decoder._held) == 51
    assert decoder.feed(newline + newline) == [("message", b"y" * 5000)]
    assert decoder._held == []


@settings(deadline=None)
@given(
    sizes=st.lists(st.integers(0, 20_000), min_size=1, max_size=4),
    newline=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    read=st.integers(1, 4096),
)
def test_frames_of_any_size_and_line_ending_decode_to_their_payloads(
    sizes: list[int], newline: bytes, read: int
) -> None:
    payloads = [bytes([97 + i % 26]) * size for i, size in enumerate(sizes)]
    body = b"".join(b"data: " + payload + newline + newline for payload in payloads)
    reads = [body[start : start + read] for start in range(0, len(body), read)]
    assert decode(*reads) == [("message", payload) for payload in payloads]


# --- the decoder against a plain reading of the WHATWG rules --------------------------------


def by_the_rules(body: bytes) -> list[ServerSentEvent]:
    """The event-stream rules read one line at a time, with nothing done for speed: what the
    decoder's hot loop (slice prefix checks, remembered event types) must agree with."""
    if body.startswith(b"\xef\xbb\xbf"):
        body = body[3:]
    lines = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    lines.pop()  # an unterminated last line is dropped
    events: list[ServerSentEvent] = []
    data: list[bytes] = []
    event = ""
    for line in lines:
        if line == b"":
            if data:
                events.append((event or "message", b"\n".join(data)))
            data, event = [], ""
            continue
        if line.startswith(b":"):
            continue
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            data.append(value)
        elif name == b"event":
            event = value.decode("utf-8", "replace")
    return events


rule_lines = st.lists(
    st.sampled_from(
        [
            b"event: content_block_delta",
            b"event: message_stop",
            b"event: ",
            b"event:ping",
            b"event",
            b"event: caf\xc3\xa9",
            b'data: {"a": 1}',
            b"data:  two spaces",
            b"data:x",
            b"data:",
            b"data",
            b": keep-alive",
            b":",
            b"id: 7",
            b"retry: 10",
            b"foo: bar",
            b"foo",
            b"",
            b"",
            b"",
        ]
    ),
    max_size=30,
)


@settings(deadline=None, max_examples=150)
@given(
    lines=rule_lines,
    newlines=st.lists(st.sampled_from([b"\n", b"\r\n", b"\r"]), min_size=1, max_size=3),
    bom=st.booleans(),
    data=st.data(),
)
def test_any_stream_cut_anywhere_decodes_as_the_rules_say(
    lines: list[bytes], newlines: list[bytes], bom: bool, data: st.DataObject
) -> None:
    """Mixed line endings, comments, ``id``/``retry``/unknown fields, fields without a colon
    or a space, several data lines, a BOM, repeated and empty event types; cut at random."""
    ends = [newlines[i % len(newlines)] for i in range(len(lines))]
    body = (b"\xef\xbb\xbf" if bom else b"") + b"".join(map(bytes.__add__, lines, ends))
    cuts = sorted(data.draw(st.sets(st.integers(0, len(body)), max_size=12)))
    reads = [body[a:b] for a, b in itertools.pairwise([0, *cuts, len(body)])]
    assert decode(*reads) == by_the_rules(body)


def test_event_types_are_remembered_up_to_a_bound() -> None:
    """A hostile stream naming a new type on every frame keeps the decoder's memory bounded,
    and every type is still read right past the bound."""
    body = b"".join(b"event: t%d\ndata: %d\n\n" % (n, n) for n in range(200))
    decoder = SSEDecoder()
    assert decoder.feed(body) == [(f"t{n}", b"%d" % n) for n in range(200)]
    assert len(decoder._names) == 64
