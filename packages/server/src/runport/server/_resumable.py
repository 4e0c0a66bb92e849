"""The HTTP side of ``--resumable``: a streamed execution that outlives its connection, the
resume route ``GET /v1/runs/{run_id}/events`` and the stop ``DELETE /v1/runs/{run_id}``.

Every connection to a run — the ``POST`` that started it as much as any resume, on any server
process sharing the log — is a reader of the run's event log: it writes the frames numbered
after the one the client last had, as they come, until the final one. Going away ends the
reading, never the run. The socket holds at most the frames of one read; the rest waits in the
log, so a slow reader costs the log, not this process.
"""

from __future__ import annotations

import contextlib
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence

import anyio
import anyio.lowlevel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from runport.contracts import Diagnostic, ErrorCode, Failed, OperationEnvelope
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter
from runport.server._body import ExecutionCall
from runport.server._errors import RequestRefused, error_response
from runport.server._event_log import EventLogError, LogEntry
from runport.server._execution import status_for
from runport.server._frames import PING, log_frames, sse_frame
from runport.server._runs import ExecutionJob, Runs, ending
from runport.server._sse import SSEWriter, json_messages

_BATCH = 128
"""Frames taken from the log per read: what one write to the socket may hold."""

_RUN_ID = re.compile(r"[0-9a-f]{32}")
_SEQ = re.compile(r"0|[1-9][0-9]{0,17}")
_TERMINALS = frozenset({"Complete", "Failed"})


PRODUCER_LOST = "the server process running the run stopped before it finished"


class StreamProtocol(ABC):
    """What a reader of a run needs of the SSE protocol the run is written in: the ending of
    a run whose producer was lost, numbered from ``first`` and given the run's last frame so
    far (it goes into the log for every reader), and the ending written, without ids, when
    the log itself is out of reach. A protocol whose frames are bare (``data:`` only) has a
    ``mark``: the event name its runs' first frame is recorded under in the log, never
    written, by which any reader knows the run's protocol."""

    @property
    def mark(self) -> str:
        return ""

    @abstractmethod
    def lost(self, first: int, last: LogEntry | None) -> list[LogEntry]: ...

    @abstractmethod
    def unnumbered(self, code: str, message: str) -> bytes: ...


class RunportStream(StreamProtocol):
    """runport's own SSE (``/executions``): frames named by their event's kind, ending in an
    envelope."""

    def lost(self, first: int, last: LogEntry | None) -> list[LogEntry]:
        """``Failed`` (unless the run sent its terminal already) and a not-ok envelope."""
        terminal = not (last is not None and last.event in _TERMINALS)
        return ending(first, ErrorCode.RUN_PRODUCER_LOST, PRODUCER_LOST, terminal=terminal)

    def unnumbered(self, code: str, message: str) -> bytes:
        """Without an ``id``, so a client that resumes later still resumes after the last
        frame it really got."""
        failed = Failed(code=code, message=message).model_dump_json()
        envelope = OperationEnvelope(
            operation="execute_contract",
            ok=False,
            diagnostics=[Diagnostic(code=code, message=message)],
        ).model_dump_json()
        return sse_frame("Failed", failed) + sse_frame("envelope", envelope)


RUNPORT_STREAM = RunportStream()


def run_protocol(
    opening: LogEntry, known: Sequence[StreamProtocol], fallback: StreamProtocol
) -> StreamProtocol:
    """The protocol the run's first frame was recorded in: a lost run's ending goes into the
    log for every reader, so it is the run's, never the route's that found the lease gone (a
    chat read through ``/v1/runs/{id}/events`` still ends as a chat)."""
    if not opening.event:
        return fallback
    return next((protocol for protocol in known if protocol.mark == opening.event), RUNPORT_STREAM)


class RunReader(Response):
    """One connection reading one run from ``after`` on. Its head is sent at once, so the
    client has the run's id (``x-runport-run-id``) before the first event; ``headers`` are
    the protocol's own (runport's SSE headers unless given)."""

    def __init__(
        self,
        runs: Runs,
        run_id: str,
        after: int,
        heartbeat: float,
        *,
        protocol: StreamProtocol = RUNPORT_STREAM,
        known: Sequence[StreamProtocol] = (RUNPORT_STREAM,),
        headers: Sequence[tuple[bytes, bytes]] | None = None,
    ) -> None:
        self._runs = runs
        self._run_id = run_id
        self.after = after
        self._heartbeat = heartbeat
        self._protocol = protocol
        self._known = known
        # When the log itself fails the reader, it ends the stream in the route's protocol.
        self._unnumbered = protocol.unnumbered
        self._marks = frozenset(known_protocol.mark for known_protocol in (protocol, *known))
        self._sse_headers = headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        writer = SSEWriter(send, self._run_id, self._heartbeat, headers=self._sse_headers)
        await writer.start()
        async with anyio.create_task_group() as group:
            group.start_soon(_until_disconnected, receive, group.cancel_scope)
            # OSError: the client went away while we wrote; the run goes on
            with contextlib.suppress(OSError):
                await self._pump(writer, send)
            group.cancel_scope.cancel()

    async def _pump(self, writer: SSEWriter, send: Send) -> None:
        log, run_id = self._runs.log, self._run_id
        hold = self._runs.orphan_timeout
        after = self.after
        touched = -hold
        while True:
            # Every read lets the loop serve others first, whatever the log's read does (one
            # that answers at once never suspends): no reader can hold the loop (adr/0042).
            await anyio.lowlevel.checkpoint()
            now = time.monotonic()
            if now - touched >= hold / 3:
                touched = now
                await self._touch(writer, hold)
            wait = min(writer.quiet_for(), touched + hold / 3 - now, log.tick)
            try:
                got = await log.read(run_id, after, wait=max(wait, 0.0), limit=_BATCH)
            except EventLogError as error:
                await writer.write(self._unnumbered(error.code, error.message))
                await writer.end()
                return
            entries = got.entries
            if entries:
                await writer.write(
                    log_frames(((e.seq, e.event, e.data) for e in entries), run_id, self._marks)
                )
                after = entries[-1].seq
                if entries[-1].final:
                    await writer.end()
                    return
            elif not got.alive:
                if not await self._abandon(after):
                    await writer.write(
                        self._unnumbered(ErrorCode.RUN_NOT_FOUND, "the run is no longer held")
                    )
                    await writer.end()
                    return
            elif writer.quiet_for() <= 0:
                await writer.write(PING)

    async def _touch(self, writer: SSEWriter, hold: float) -> None:
        with contextlib.suppress(EventLogError):  # the read right after says so
            await self._runs.log.touch(self._run_id, hold)

    async def _abandon(self, after: int) -> bool:
        """The producer lost its lease: end the run for every reader (one of them wins).
        ``False`` when nothing more can come for this reader: the log no longer holds the
        run, or holds it finished (or cut short) with nothing after ``after``."""
        log, run_id = self._runs.log, self._run_id
        last: Sequence[LogEntry] = ()
        protocol = self._protocol
        if after:
            last = (await log.read(run_id, after - 1, wait=0, limit=1)).entries
            opening = last if after == 1 else (await log.read(run_id, 0, wait=0, limit=1)).entries
            if opening:
                protocol = run_protocol(opening[0], self._known, protocol)
        await log.abandon(run_id, protocol.lost(after + 1, last[0] if last else None))
        state = await log.state(run_id)
        if state is None:
            return False
        # More to read, or a producer whose lease stands again (it renewed meanwhile).
        return state.last_seq > after or (state.last_seq == after and not state.finished)


class ResumableExecution(Response):
    """``POST /v1/contracts/{id}/executions`` as an event stream with ``--resumable``: the run
    starts in a task of its own, and this connection is its first reader."""

    def __init__(
        self,
        runs: Runs,
        contract: Contract,
        adapter: AsyncRuntimeAdapter,
        call: ExecutionCall,
        *,
        owned: bool,
        heartbeat: float,
        partial_output: bool = False,
    ) -> None:
        self._runs = runs
        self._job = ExecutionJob(contract, adapter, call, owned, partial_output=partial_output)
        self._heartbeat = heartbeat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            run_id, begun = await self._runs.start(self._job)
            if not await begun:
                # Refused before the adapter was called (bad inputs): the JSON envelope and
                # its status, as without --resumable.
                got = await self._runs.log.read(run_id, 0, wait=0, limit=1)
                if got.entries and got.entries[0].final:
                    data = got.entries[0].data
                    status = status_for(OperationEnvelope.model_validate_json(data))
                    if status != 200:
                        for message in json_messages(status, data.encode(), run_id):
                            await send(message)
                        return
        except EventLogError as error:
            response = error_response(RequestRefused(503, error.code, error.message))
            await response(scope, receive, send)
            return
        await RunReader(self._runs, run_id, 0, self._heartbeat)(scope, receive, send)


def _parse_after(request: Request, run_id: str) -> int:
    """The last frame the client has: ``Last-Event-ID`` (what a browser's ``EventSource``
    sends when it reconnects), else ``?after=<seq>``, else none (0)."""
    last = request.headers.get("last-event-id")
    if last is not None:
        named, colon, seq = last.strip().rpartition(":")
        if not colon or not _RUN_ID.fullmatch(named) or not _SEQ.fullmatch(seq):
            raise RequestRefused(
                400,
                ErrorCode.DATA_INVALID,
                "Last-Event-ID must be <run_id>:<seq>, as the server sent it in an event's id",
            )
        if named != run_id:
            raise RequestRefused(
                400,
                ErrorCode.DATA_INVALID,
                f"Last-Event-ID names another run ({named}), not {run_id}",
            )
        return int(seq)
    after = request.query_params.get("after")
    if after is None:
        return 0
    if not _SEQ.fullmatch(after):
        raise RequestRefused(
            400, ErrorCode.DATA_INVALID, "after must be an event's number (a whole number)"
        )
    return int(after)


def _not_found(run_id: str, retention: float) -> RequestRefused:
    return RequestRefused(
        404,
        ErrorCode.RUN_NOT_FOUND,
        f"no run {run_id!r} here: never started, or finished more than {retention:g} s ago",
    )


async def run_events(
    runs: Runs,
    request: Request,
    run_id: str,
    heartbeat: float,
    known: Sequence[StreamProtocol] = (RUNPORT_STREAM,),
) -> Response:
    """``GET /v1/runs/{run_id}/events``: replay what the client missed, then go on live."""
    after = _parse_after(request, run_id)
    if not _RUN_ID.fullmatch(run_id):
        raise _not_found(run_id, runs.log.retention)
    try:
        await runs.ready()
        state = await runs.log.state(run_id)
    except EventLogError as error:
        raise RequestRefused(503, error.code, error.message) from None
    if state is None:
        raise _not_found(run_id, runs.log.retention)
    if after > state.last_seq:
        raise RequestRefused(
            400,
            ErrorCode.DATA_INVALID,
            f"event {after} of run {run_id} has not been sent (the last is {state.last_seq})",
        )
    if after + 1 < state.first_seq:
        raise RequestRefused(
            410,
            ErrorCode.RUN_NOT_FOUND,
            f"the events of run {run_id} before {state.first_seq} are no longer held",
        )
    if state.finished and after == state.last_seq:
        # The client has it all; 204 also tells a browser's EventSource not to reconnect.
        return Response(status_code=204, headers={"x-runport-run-id": run_id})
    return RunReader(runs, run_id, after, heartbeat, known=known)


async def stop_run(runs: Runs, run_id: str) -> Response:
    """``DELETE /v1/runs/{run_id}``: a caller stop, on whichever process runs it."""
    if not _RUN_ID.fullmatch(run_id):
        raise _not_found(run_id, runs.log.retention)
    try:
        stopping = await runs.stop(run_id)
        known = stopping or await runs.log.state(run_id) is not None
    except EventLogError as error:
        raise RequestRefused(503, error.code, error.message) from None
    if not known:
        raise _not_found(run_id, runs.log.retention)
    return JSONResponse(
        {"run_id": run_id, "state": "stopping" if stopping else "finished"},
        status_code=202 if stopping else 200,
    )


async def _until_disconnected(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return
