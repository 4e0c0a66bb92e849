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
from starlette.types import Receive, Scope, Send

from runport.application import SnapshotPace, aclose_adapter, aexecute_contract, astream
from runport.contracts import ErrorCode, OperationEnvelope
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter
from runport.server._body import ExecutionCall
from runport.server._disconnect import respond_until_disconnected
from runport.server._frames import envelope_frame, event_frame, id_prefix, numbered_frame
from runport.server._sse import DEFAULT_HEARTBEAT_S, SSEWriter, json_messages, new_run_id

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
        for message in json_messages(status_for(envelope), envelope.model_dump_json().encode()):
            await send(message)

    async def _stream(self, send: Send) -> None:
        writer = SSEWriter(send, new_run_id(), self._heartbeat)
        prefix, seq = id_prefix(writer.run_id), 0
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
                        await writer.write(numbered_frame(prefix, seq, event_frame(event)))
                    else:
                        for shown in pace(event):
                            seq += 1
                            await writer.write(numbered_frame(prefix, seq, event_frame(shown)))
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
                for message in json_messages(status, envelope.model_dump_json().encode()):
                    await send(message)
                return
        await writer.write(numbered_frame(prefix, seq + 1, envelope_frame(envelope)))
        await writer.end()
