"""Every server-sent-event frame the server writes, and nowhere else.

Two kinds of frame go out. runport's own (``/executions``) are named: ``event: <kind>`` and
one ``data:`` line of the event's JSON. The frontend protocols' (the AI SDK's UI message
stream, AG-UI) are bare ``data: <json>`` frames. Either may carry an ``id: <run_id>:<seq>``
line (the number a client resumes after), and a quiet stream carries ``: ping`` comments.
An encoder turns one run event into the payloads it owes and hands them here together, so
one run event leaves as one chunk of bytes, numbered as it is written: no frame is split
apart and written again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from json.encoder import encode_basestring_ascii

from runport.contracts import OperationEnvelope, RunEvent

__all__ = [
    "DONE",
    "PING",
    "data_frames",
    "envelope_data",
    "envelope_frame",
    "event_frame",
    "id_prefix",
    "json_string",
    "log_frames",
    "numbered_data_frames",
    "numbered_frame",
    "sse_frame",
]

DONE = b"[DONE]"
"""The UI message stream's closing payload, ``data: [DONE]`` once framed (AG-UI has none: its
last event says it all)."""

PING = b": ping\n\n"
"""The comment a quiet stream sends, so no proxy takes it for a dead one."""


def json_string(text: str) -> bytes:
    """``text`` as a JSON string, ASCII-only: a lone surrogate (which no UTF-8 encoder
    takes) is written as its escape, never an error mid-stream."""
    return encode_basestring_ascii(text).encode("ascii")


def data_frames(payloads: Sequence[bytes]) -> bytes:
    """The bare frames for one run event's payloads, each compact JSON on a single line."""
    if len(payloads) == 1:  # one join: a large payload (a generated file) is copied once
        return b"".join((b"data: ", payloads[0], b"\n\n"))
    pieces: list[bytes] = []
    for payload in payloads:
        pieces += (b"data: ", payload, b"\n\n")
    return b"".join(pieces)


def id_prefix(run_id: str) -> bytes:
    """The start of every ``id:`` line of one run's frames."""
    return f"id: {run_id}:".encode()


def numbered_data_frames(payloads: Sequence[bytes], prefix: bytes, seq: int) -> tuple[bytes, int]:
    """``data_frames(payloads)``, each frame numbered after ``seq`` (``prefix`` is the run's
    ``id_prefix``); the frames and the last number."""
    pieces: list[bytes] = []
    for payload in payloads:  # one join: a large payload (a generated file) is copied once
        seq += 1
        pieces += (b"%s%d\ndata: " % (prefix, seq), payload, b"\n\n")
    return b"".join(pieces), seq


def sse_frame(name: str, data: str) -> bytes:
    """One named event; ``data`` is compact JSON, so it is always a single ``data:`` line."""
    return f"event: {name}\ndata: {data}\n\n".encode()


_FRAME_HEADS: dict[str, bytes] = {}


def event_frame(event: RunEvent) -> bytes:
    """``sse_frame(event.kind, <the event's JSON>)``, made from the event's JSON bytes as
    pydantic writes them (the same bytes ``TypeAdapter(RunEvent).dump_json`` gives) and a
    head made once per kind: one encoding per event, and no text round trip."""
    head = _FRAME_HEADS.get(event.kind)
    if head is None:
        head = _FRAME_HEADS.setdefault(event.kind, f"event: {event.kind}\ndata: ".encode())
    return b"".join((head, event.__pydantic_serializer__.to_json(event), b"\n\n"))


def envelope_data(envelope: OperationEnvelope) -> str:
    """The closing ``envelope`` event's data, without the ``stream_events`` the client
    already has."""
    return envelope.model_copy(update={"stream_events": None}).model_dump_json()


def envelope_frame(envelope: OperationEnvelope) -> bytes:
    """The closing ``envelope`` event of runport's own stream."""
    return sse_frame("envelope", envelope_data(envelope))


def numbered_frame(prefix: bytes, seq: int, frame: bytes) -> bytes:
    """A frame written above with its ``id:`` line (``prefix`` is the run's ``id_prefix``)."""
    return b"%s%d\n%s" % (prefix, seq, frame)


def log_frames(
    entries: Iterable[tuple[int, str, str]], run_id: str, unnamed: frozenset[str] = frozenset()
) -> bytes:
    """Frames as a run's log holds them (number, event name, data), each with its id. A name
    in ``unnamed`` writes no ``event:`` line, as an empty one: the frontend protocols name
    no event, and record their protocol's mark in the name of a run's first frame."""
    out: list[str] = []
    for seq, name, data in entries:
        if name and name not in unnamed:
            out.append(f"id: {run_id}:{seq}\nevent: {name}\ndata: {data}\n\n")
        else:
            out.append(f"id: {run_id}:{seq}\ndata: {data}\n\n")
    return "".join(out).encode()
