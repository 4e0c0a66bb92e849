"""A server-sent events decoder that works on bytes, as they come off the network.

Written here rather than taken from ``httpx-sse`` because the streaming hot path is this
loop: decoding each read to ``str`` and splitting it line by line in Python cost more per
event than the JSON decoding that follows (measured in ``benchmarks/streaming_overhead.py``;
the choice is recorded in ADR 0006; it moved here from ``runport.openai`` so every codec
shares it, ADR 0012). Working on bytes is also what makes UTF-8 split across
reads a non-issue: lines are cut at ``\\n``, which never occurs inside a multi-byte sequence,
and each payload is handed to the JSON decoder whole.

It follows the WHATWG event-stream rules the OpenAI-compatible servers rely on: lines end in
LF, CRLF or CR; a line starting with ``:`` is a comment (keep-alive); ``data:`` with or without
one space; several ``data`` lines in one event are joined with ``\\n``; a blank line dispatches;
an event whose blank line never came (the stream ended first) is dropped; a leading BOM is
ignored. ``id`` and ``retry`` are accepted and ignored: a chat completion is never resumed.
"""

from __future__ import annotations

from typing import Final

__all__ = ["SSEDecoder", "ServerSentEvent"]

_BOM: Final = b"\xef\xbb\xbf"
_NAMES: Final = 64  # distinct event lines remembered per stream: bounded against a hostile one

ServerSentEvent = tuple[str, bytes]
"""``(event type, data)``. The type is ``"message"`` unless an ``event:`` field named another."""


class SSEDecoder:
    """Feed it the body's reads in order, then call ``end``; each call returns the events
    those bytes completed.

    Returning a list per read (not a generator per event) keeps the per-event cost to a list
    append; every returned event was complete when its read arrived, so nothing waits.

    Linear in the body's size whatever its line endings: each read is normalised to LF once
    (a CR that ends a read ends its line at once, and an LF opening the next read is then the
    rest of that CRLF), and a line that spans reads is held as a list of pieces joined once,
    when its end arrives.
    """

    __slots__ = ("_after_cr", "_data", "_event", "_held", "_names", "_started")

    def __init__(self) -> None:
        self._held: list[bytes] = []  # the start of a line whose end has not arrived
        self._data: list[bytes] = []
        self._event: str | None = None
        self._started = False
        self._after_cr = False
        self._names: dict[bytes, str] = {}

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if not self._started:
            chunk = b"".join((*self._held, chunk))
            self._held.clear()
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                # Too short to tell whether a BOM begins here: wait for more.
                if chunk:
                    self._held.append(chunk)
                return []
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._after_cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            if chunk:
                self._held.append(chunk)
            return []
        if self._held:
            self._held.append(chunk)
            chunk = b"".join(self._held)
            self._held.clear()
        lines = chunk.split(b"\n")
        del chunk  # a frame held over many reads is joined here: not kept beside its lines
        tail = lines.pop()
        if tail:
            self._held.append(tail)
        return self._lines(lines)

    def end(self) -> list[ServerSentEvent]:
        """The body ended: an unterminated line, and an event whose blank line never came,
        are dropped."""
        self._held.clear()
        return []

    def _lines(self, lines: list[bytes]) -> list[ServerSentEvent]:
        """The per-line loop, the hot path (3 lines a frame on a typed stream): its state in
        locals, the two common prefixes compared as slices (cheaper than ``startswith`` on
        CPython 3.11), an ``event:`` line's decoded type looked up by the line itself.
        Cutting the chunk on ``b"\\n\\n"`` into whole frames was measured slower: a
        two-byte ``split`` costs 2.4 times a one-byte one there."""
        events: list[ServerSentEvent] = []
        append = events.append
        data = self._data
        event = self._event
        names = self._names
        for line in lines:
            if not line:
                if data:
                    append((event or "message", data[0] if len(data) == 1 else b"\n".join(data)))
                    data.clear()
                event = None
            elif line[:6] == b"data: ":
                data.append(line[6:])
            elif line[:7] == b"event: ":  # on every frame of a typed stream: remembered
                event = names.get(line)
                if event is None:
                    event = self._name(line)
            elif line.startswith(b"data:"):
                data.append(line[5:])
            else:
                event = self._field(line, event)
        self._event = event
        return events

    def _name(self, line: bytes) -> str:
        """An ``event: T`` line's type, remembered by the line (a stream repeats a handful);
        ``""`` for an empty one, read as ``"message"`` when the event is dispatched."""
        event = line[7:].decode("utf-8", "replace")
        if len(self._names) < _NAMES:
            self._names[line] = event
        return event

    def _field(self, line: bytes, event: str | None) -> str | None:
        """Any other line: a comment, ``id``, ``retry``, an unknown field, ``data`` or
        ``event`` without their colon or space. Returns the event type, changed or not."""
        if line.startswith(b":"):
            return event
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":  # "data" alone on its line: an empty data line
            self._data.append(value)
        elif name == b"event":
            return value.decode("utf-8", "replace")
        return event
