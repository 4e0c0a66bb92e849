"""How the frontend streams write their frames: one ``data:`` line per JSON payload.

Both frontend protocols (the AI SDK's UI message stream and AG-UI) are server-sent events
whose every event is a bare ``data: <json>`` frame. An encoder turns one run event into the
payloads it owes and hands them here together, so one run event always leaves as one chunk
of bytes. Every frame of both protocols is written by ``data_frames``: this is the one
place that would add a per-frame ``id:`` line.
"""

from __future__ import annotations

from collections.abc import Sequence
from json.encoder import encode_basestring_ascii

__all__ = ["DONE", "data_frames", "json_string"]

DONE = b"data: [DONE]\n\n"
"""The UI message stream's closing frame (AG-UI has none: its last event says it all)."""


def data_frames(payloads: Sequence[bytes]) -> bytes:
    """The frames for one run event's payloads, each compact JSON on a single line."""
    if len(payloads) == 1:
        return b"data: " + payloads[0] + b"\n\n"
    return b"".join([b"data: " + payload + b"\n\n" for payload in payloads])


def json_string(text: str) -> bytes:
    """``text`` as a JSON string, ASCII-only: a lone surrogate (which no UTF-8 encoder
    takes) is written as its escape, never an error mid-stream."""
    return encode_basestring_ascii(text).encode("ascii")
