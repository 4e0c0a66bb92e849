"""What every HTTP protocol's rendering shares: frames tagged with the progress they owe,
scripted responses, and the faults, committed the same way whichever protocol speaks.

A protocol says only what its bytes are — the frames before the first progress, one frame
(or more) per step, the frames that complete the turn, its error and garbage frames, its
error body — and ``stream_response`` / ``body_response`` commit the case's fault with them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from runport.conformance._cases import Case

__all__ = [
    "Ending",
    "Frame",
    "Piece",
    "Response",
    "body_response",
    "dumps",
    "retry_headers",
    "stream_response",
]


@dataclass(frozen=True)
class Frame:
    """Bytes written in one go (or two, split inside a UTF-8 sequence when ``split``).

    ``owes`` is the number of progress events the client must have delivered once it has
    this frame: the upstream withholds the next frame until the sink has seen that many.
    """

    data: bytes
    owes: int
    split: bool = False


Ending = Literal["end", "reset", "stall"]


@dataclass(frozen=True)
class Response:
    """One scripted HTTP response: status, headers, the frames of its body, how it ends.

    ``chunked`` bodies are sent with chunked transfer encoding (one chunk per frame write);
    others carry ``Content-Length`` of ``declared`` bytes, which may exceed what is sent
    when the ending is a reset or a stall.
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    frames: tuple[Frame, ...]
    chunked: bool
    ending: Ending = "end"
    declared: int = 0
    progress: int = 0


Piece = tuple[bytes, int]
"""A frame's bytes and how many progress events they carry."""

JSON_HEADERS = (("Content-Type", "application/json"),)
SSE_HEADERS = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"))


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def retry_headers(case: Case) -> tuple[tuple[str, str], ...]:
    """An error body's headers, with the fault's ``Retry-After`` (whole seconds)."""
    fault = case.fault
    if fault is None or fault.retry_after_ms is None:
        return JSON_HEADERS
    return (*JSON_HEADERS, ("Retry-After", str(fault.retry_after_ms // 1000)))


def _whole(status: int, headers: tuple[tuple[str, str], ...], body: bytes) -> Response:
    return Response(status, headers, (Frame(body, 0),), chunked=False, declared=len(body))


def stream_response(
    case: Case,
    *,
    opening: Sequence[bytes],
    steps: Sequence[Piece],
    closing: Sequence[bytes],
    error_frame: bytes,
    garbage: bytes,
    status_body: bytes,
) -> Response:
    """The case as an event stream: ``opening``, the ``steps``, then ``closing`` when the
    turn succeeds (or is oversize: the bound trips first), or the fault: a status with
    ``status_body`` before any frame, a garbage or error frame, a reset, a stall, or a clean
    end without ``closing`` (truncation)."""
    fault = case.fault
    if fault is not None and fault.kind == "status":
        assert fault.status is not None
        return _whole(fault.status, retry_headers(case), status_body)
    frames = [Frame(data, 0) for data in opening]
    owed = 0
    for data, carried in steps:
        owed += carried
        frames.append(Frame(data, owed, case.split_utf8 and carried > 0))
    ending: Ending = "end"
    if fault is None or fault.kind == "oversize":
        frames += [Frame(data, owed) for data in closing]
    elif fault.kind == "garbage":
        frames.append(Frame(garbage, owed))
    elif fault.kind == "error_frame":
        frames.append(Frame(error_frame, owed))
    elif fault.kind in ("reset", "stall"):
        ending = "reset" if fault.kind == "reset" else "stall"
    if not case.role_frame and not case.steps:
        frames = []
    return Response(200, SSE_HEADERS, tuple(frames), chunked=True, ending=ending, progress=owed)


def body_response(
    case: Case, body: Any, *, error_status: int, error_body: bytes, status_body: bytes, marker: str
) -> Response:
    """The case as one JSON body (an unstreamed call): ``body`` (a value, or its encoding)
    when the turn succeeds, else
    the fault — a status, an error body (``error_status``), garbage, half the body then a
    clean end, a reset or a stall."""
    fault = case.fault
    if fault is not None and fault.kind == "status":
        assert fault.status is not None
        return _whole(fault.status, retry_headers(case), status_body)
    if fault is not None and fault.kind == "error_frame":
        return _whole(error_status, JSON_HEADERS, error_body)
    if fault is not None and fault.kind == "garbage":
        return _whole(200, JSON_HEADERS, b"{not json " + marker.encode())
    data = body if isinstance(body, bytes) else dumps(body)
    if fault is None or fault.kind == "oversize":
        return _whole(200, JSON_HEADERS, data)
    half = data[: len(data) // 2]
    if fault.kind == "eof":
        return _whole(200, JSON_HEADERS, half if case.steps else b"")
    ending: Ending = "reset" if fault.kind == "reset" else "stall"
    return Response(
        200, JSON_HEADERS, (Frame(half, 0),), chunked=False, ending=ending, declared=len(data)
    )
