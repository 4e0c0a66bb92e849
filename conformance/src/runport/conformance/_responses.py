"""A case's fault committed with a protocol's own pieces: the scripted HTTP response (or the
scenario turn) the upstream plays, whichever ``WireProtocol`` speaks.

A protocol says only what its bytes are (``WireProtocol.stream`` / ``body`` / ``error_frame``
/ ``garbage_frame`` / ``error_body``); ``stream_response`` and ``body_response`` commit every
fault the same way for all of them — an HTTP status before any frame (throttled, down), a
garbage or error frame after the steps, a reset or a stall (the connection cut, or silent), a
clean end without the completion marker (truncation), an oversize body — each frame tagged
with how many progress events the client owes once it has it (law 4's bookkeeping).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from runport.conformance._cases import Case
from runport.conformance._wire_protocol import WireContext, WireProtocol

__all__ = ["Ending", "Response", "SentFrame", "body_response", "scenario_turn", "stream_response"]


@dataclass(frozen=True)
class SentFrame:
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
    frames: tuple[SentFrame, ...]
    chunked: bool
    ending: Ending = "end"
    declared: int = 0
    progress: int = 0
    hold_after: int | None = None
    """The frame after which the upstream holds the rest back until the client closes (law 8
    for an unstreamed answer: the frames up to here already exceed the bound)."""


def _error_headers(protocol: WireProtocol, case: Case) -> tuple[tuple[str, str], ...]:
    """An error body's headers, with the fault's ``Retry-After`` (whole seconds)."""
    headers = (("Content-Type", protocol.body_content_type),)
    fault = case.fault
    if fault is None or fault.retry_after_ms is None:
        return headers
    return (*headers, ("Retry-After", str(fault.retry_after_ms // 1000)))


def _whole(status: int, headers: tuple[tuple[str, str], ...], body: bytes) -> Response:
    return Response(status, headers, (SentFrame(body, 0),), chunked=False, declared=len(body))


def _status(protocol: WireProtocol, case: Case, context: WireContext) -> Response | None:
    fault = case.fault
    if fault is None or fault.kind != "status":
        return None
    assert fault.status is not None
    return _whole(
        fault.status, _error_headers(protocol, case), protocol.error_body(fault.status, context)
    )


def stream_response(protocol: WireProtocol, case: Case, context: WireContext) -> Response:
    """The played case as a streamed answer: the transcript's opening and steps, then its
    closing when the turn succeeds (or is oversize: the bound trips first), or the fault."""
    refused = _status(protocol, case, context)
    if refused is not None:
        return refused
    transcript = protocol.stream(case, context)
    fault = case.fault
    frames = [SentFrame(data, 0) for data in transcript.opening]
    owed = 0
    for frame in transcript.steps:
        owed += frame.carries
        frames.append(SentFrame(frame.data, owed, case.split_utf8 and frame.carries > 0))
    ending: Ending = "end"
    if fault is None or fault.kind == "oversize":
        frames += [SentFrame(data, owed) for data in transcript.closing]
    elif fault.kind == "garbage":
        frames.append(SentFrame(protocol.garbage_frame(context), owed))
    elif fault.kind == "error_frame":
        frames.append(SentFrame(protocol.error_frame(case, context), owed))
    elif fault.kind in ("reset", "stall"):
        ending = "reset" if fault.kind == "reset" else "stall"
    if not case.role_frame and not case.steps:
        frames = []
    headers = (("Content-Type", protocol.content_type), ("Cache-Control", "no-cache"))
    return Response(200, headers, tuple(frames), chunked=True, ending=ending, progress=owed)


def body_response(protocol: WireProtocol, case: Case, context: WireContext) -> Response:
    """The played case as one body (an unstreamed call): the protocol's body when the turn
    succeeds, else the fault — a status, an error body (``error_status``), garbage, half the
    body then a clean end, a reset or a stall."""
    refused = _status(protocol, case, context)
    if refused is not None:
        return refused
    fault = case.fault
    headers = (("Content-Type", protocol.body_content_type),)
    if fault is not None and fault.kind == "error_frame":
        status, body = protocol.error_response(case, context)
        return _whole(status, headers, body)
    if fault is not None and fault.kind == "garbage":
        return _whole(200, headers, b"{not json " + context.marker.encode())
    data = protocol.body(case, context)
    if fault is not None and fault.kind == "oversize" and case.max_response_bytes is not None:
        return _past_the_bound(headers, data, case.max_response_bytes)
    if fault is None or fault.kind == "oversize":
        return _whole(200, headers, data)
    half = data[: len(data) // 2]
    if fault.kind == "eof":
        return _whole(200, headers, half if case.steps else b"")
    ending: Ending = "reset" if fault.kind == "reset" else "stall"
    return Response(
        200, headers, (SentFrame(half, 0),), chunked=False, ending=ending, declared=len(data)
    )


def _past_the_bound(headers: tuple[tuple[str, str], ...], data: bytes, bound: int) -> Response:
    """An oversize body sent in two parts: twice the bound first, then (once the upstream has
    waited for the client to close) the rest. A client that measures what it reads has failed
    and closed before the rest comes; one that reads the whole body before measuring it waits
    for the rest (law 8: memory stays bounded, so the count is kept as the body is read)."""
    cut = 2 * bound
    if len(data) <= cut:
        return _whole(200, headers, data)
    frames = (SentFrame(data[:cut], 0), SentFrame(data[cut:], 0))
    return Response(200, headers, frames, chunked=False, declared=len(data), hold_after=0)


def scenario_turn(protocol: WireProtocol, case: Case, context: WireContext) -> dict[str, Any]:
    """The played case as one ``runport.mock/v1`` turn, for an ``in_process`` protocol: the
    transcript's frames are events as JSON; every fault but oversize (which the runtime's
    own bound must catch) is the error frame after the steps."""
    fault = case.fault
    transcript = protocol.stream(case, context)
    frames = [*transcript.opening, *(frame.data for frame in transcript.steps)]
    if fault is None or fault.kind == "oversize":
        frames += transcript.closing
    else:
        frames.append(protocol.error_frame(case, context))
    return {"events": [json.loads(data) for data in frames]}
