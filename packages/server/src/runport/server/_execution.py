"""One execution as an ASGI response: the envelope as JSON, or the run as server-sent events.

The run happens in a task of its own, on the event loop (no worker thread), beside a watcher
that waits for the client to go away. A client that disconnects cancels the run's task, once,
and cancellation is the async port's caller stop: the adapter closes its upstream. (With
``--resumable`` a streamed run is decoupled from its connection instead: ``_resumable.py``.)
"""

from __future__ import annotations

import asyncio
import time

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from runport.application import SnapshotPace, aclose_adapter, aexecute_contract, astream
from runport.contracts import ErrorCode, OperationEnvelope, RunEvent
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter
from runport.server._body import ExecutionCall
from runport.server._disconnect import respond_until_disconnected
from runport.server._sse import DEFAULT_HEARTBEAT_S, SSEWriter, new_run_id

_INPUT_CODES = frozenset(
    {ErrorCode.VALUE_REQUIRED, ErrorCode.VALUE_SCHEMA, ErrorCode.VALUE_UNKNOWN}
)
STREAM_SLICE_S = 0.005
"""How long one response may stream before it lets the event loop run other requests: a
stream whose adapter never waits would otherwise send all of its events before the next
request got its first (ADR 0035)."""


def status_for(envelope: OperationEnvelope) -> int:
    """422 when the caller's inputs (or context) kept the call from being made; otherwise
    200, a not-ok envelope included: the execution happened, and the envelope says how it
    went."""
    if envelope.ok or envelope.result is not None:
        return 200
    codes = {diagnostic.code for diagnostic in envelope.diagnostics}
    return 422 if codes and codes <= _INPUT_CODES else 200


def sse_frame(name: str, data: str) -> bytes:
    """One event; ``data`` is compact JSON, so it is always a single ``data:`` line."""
    return f"event: {name}\ndata: {data}\n\n".encode()


def envelope_data(envelope: OperationEnvelope) -> str:
    """The closing ``envelope`` event's data, without the ``stream_events`` the client
    already has."""
    return envelope.model_copy(update={"stream_events": None}).model_dump_json()


_FRAME_HEADS: dict[str, bytes] = {}


def event_frame(event: RunEvent) -> bytes:
    """``sse_frame(event.kind, <the event's JSON>)``, made from the event's JSON bytes as
    pydantic writes them (the same bytes ``TypeAdapter(RunEvent).dump_json`` gives) and a
    head made once per kind: one encoding per event, and no text round trip."""
    head = _FRAME_HEADS.get(event.kind)
    if head is None:
        head = _FRAME_HEADS.setdefault(event.kind, f"event: {event.kind}\ndata: ".encode())
    return b"".join((head, event.__pydantic_serializer__.to_json(event), b"\n\n"))


def envelope_frame(envelope: OperationEnvelope) -> bytes:
    """The closing ``envelope`` event, without the ``stream_events`` the client already has."""
    return sse_frame("envelope", envelope_data(envelope))


def _json_start(status: int, body: bytes) -> list[Message]:
    return [
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        },
        {"type": "http.response.body", "body": body},
    ]


class Execution(Response):
    """The response to one ``POST /v1/contracts/{id}/executions``: it runs the contract while
    it is being sent. An ``owned`` adapter (built for this request) is closed after it; a
    shared one stays open for the next. Streamed with ``partial_output``, a structured
    answer's ``OutputSnapshot`` events ride beside its ``Delta`` events (every ``RunEvent``
    kind is written the same way, as its ``kind`` and its JSON)."""

    def __init__(
        self,
        contract: Contract,
        adapter: AsyncRuntimeAdapter,
        call: ExecutionCall,
        *,
        streamed: bool,
        owned: bool = False,
        partial_output: bool = False,
        heartbeat: float = DEFAULT_HEARTBEAT_S,
    ) -> None:
        self._contract = contract
        self._adapter = adapter
        self._call = call
        self._streamed = streamed
        self._owned = owned
        self._partial_output = partial_output
        self._heartbeat = heartbeat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await respond_until_disconnected(
                self._stream(send) if self._streamed else self._whole(send), receive
            )
        finally:
            if self._owned:
                await aclose_adapter(self._adapter)

    async def _whole(self, send: Send) -> None:
        envelope = await aexecute_contract(
            self._contract, self._adapter, inputs=self._call.inputs, context=self._call.context
        )
        for message in _json_start(status_for(envelope), envelope.model_dump_json().encode()):
            await send(message)

    async def _stream(self, send: Send) -> None:
        writer = SSEWriter(send, new_run_id(), self._heartbeat)
        id_prefix, seq = f"id: {writer.run_id}:".encode(), 0
        # The heartbeats as a task of their own, cancelled once: not a task group, whose
        # cancelled scope would cancel the adapter's cleanup as well.
        beats = asyncio.ensure_future(writer.heartbeats())
        try:
            async with astream(
                self._contract,
                self._adapter,
                inputs=self._call.inputs,
                context=self._call.context,
                partial_output=self._partial_output,
            ) as events:
                turn = time.monotonic() + STREAM_SLICE_S
                # each snapshot is written whole: thinned, so that they weigh what the answer
                # does times a constant, not times its length (SnapshotPace)
                pace = SnapshotPace() if self._partial_output else None
                async for event in events:
                    if pace is None:  # no snapshots: nothing between the event and its frame
                        seq += 1
                        await writer.write(b"%s%d\n%s" % (id_prefix, seq, event_frame(event)))
                    else:
                        for shown in pace(event):
                            seq += 1
                            frame = event_frame(shown)
                            await writer.write(b"%s%d\n%s" % (id_prefix, seq, frame))
                    if time.monotonic() >= turn:
                        # An adapter that never waits (the mock, a read of many frames) would
                        # hold the loop for its whole stream: let the other requests have theirs.
                        await asyncio.sleep(0)
                        turn = time.monotonic() + STREAM_SLICE_S
                envelope = events.envelope
        finally:
            beats.cancel()
        if not writer.started:
            # No event at all: the call was refused before the adapter ran.
            status = status_for(envelope)
            if status != 200:
                for message in _json_start(status, envelope.model_dump_json().encode()):
                    await send(message)
                return
        await writer.write(b"%s%d\n%s" % (id_prefix, seq + 1, envelope_frame(envelope)))
        await writer.end()
