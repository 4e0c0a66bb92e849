"""``Runs``: a resumable server's runs, each produced by a task of its own into the event log,
never by a connection.

A producer runs ``aexecute_contract`` with a sink that appends each event to the log as the
adapter sends it — the log, not a socket, holds what readers have not read yet, so a slow or
absent reader never holds the adapter back. Beside it, every ``tick`` of the log, the producer
renews its lease and learns whether a stop was asked for (``DELETE /v1/runs/{id}`` on any
process) and whether anyone still reads the run; either ends the run as a caller stop: the
task is cancelled, which makes the adapter close its upstream, and the run's last frames are a
``Failed`` with ``TQX_CALLER_STOPPED`` and the envelope.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from pydantic import TypeAdapter

from runport.application import SnapshotPace, aclose_adapter, aexecute_contract
from runport.contracts import (
    Complete,
    Diagnostic,
    ErrorCode,
    Failed,
    OperationEnvelope,
    RunEvent,
    StreamEvent,
)
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter, check_seconds
from runport.server._body import ExecutionCall
from runport.server._event_log import EventLog, EventLogError, LogEntry, RunClosed
from runport.server._frames import envelope_data
from runport.server._sse import new_run_id
from runport.server._watched import Watched

_log = logging.getLogger("runport.server")
_EVENT: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)

_MAX_UNWRITTEN = 512
"""Frames a producer may have handed to a coalescing log before it waits for the writes."""

DEFAULT_ORPHAN_TIMEOUT_S = 30.0
"""How long a resumable run may go unread (no client connected to it) before it is stopped."""


def check_orphan_timeout(seconds: float) -> float:
    checked = check_seconds(seconds, "orphan_timeout")
    if checked is None:
        raise ValueError("orphan_timeout must be a positive, finite number of seconds")
    return checked


def event_entry(seq: int, event: StreamEvent) -> LogEntry:
    return LogEntry(seq, event.kind, _EVENT.dump_json(event).decode())


def envelope_entry(seq: int, envelope: OperationEnvelope) -> LogEntry:
    return LogEntry(seq, "envelope", envelope_data(envelope), final=True)


def ending(seq: int, code: str, message: str, *, terminal: bool = True) -> list[LogEntry]:
    """The last frames of a run that did not end by itself, numbered from ``seq``: its
    ``Failed`` (unless the run already sent a terminal) and a not-ok envelope."""
    envelope = OperationEnvelope(
        operation="execute_contract",
        ok=False,
        diagnostics=[Diagnostic(code=code, message=message)],
    )
    entries = [event_entry(seq, Failed(code=code, message=message))] if terminal else []
    entries.append(envelope_entry(seq + len(entries), envelope))
    return entries


@dataclass(frozen=True, slots=True)
class _Ending:
    code: str
    message: str


Frame = tuple[str, str]
"""An SSE frame before it is numbered: its event name (empty: no ``event:`` line) and data."""

Emit = Callable[[str, str], Awaitable[None]]


class Job(ABC):
    """What a producer runs, in some SSE protocol: ``run`` hands each frame to ``emit`` as
    the run goes and returns the run's last frames; ``ending`` gives the last frames of a run
    stopped before its end (``terminal``: the run already sent its terminal event)."""

    @abstractmethod
    async def run(self, emit: Emit, begun: asyncio.Future[bool]) -> list[Frame]: ...

    @abstractmethod
    def ending(self, code: str, message: str) -> list[Frame]: ...

    async def aclose(self) -> None:  # noqa: B027 (a job may own nothing)
        """Let go of what the job owns (an adapter built for it)."""


class ExecutionJob(Job):
    """``POST /v1/contracts/{id}/executions``: one turn, runport's own frames (with
    ``partial_output``, a structured answer's ``OutputSnapshot`` frames beside its deltas,
    as without ``--resumable``)."""

    def __init__(
        self,
        contract: Contract,
        adapter: AsyncRuntimeAdapter,
        call: ExecutionCall,
        owned: bool,
        *,
        partial_output: bool = False,
    ) -> None:
        self.contract = contract
        self.adapter = adapter
        self.call = call
        self.owned = owned
        self.partial_output = partial_output
        self.terminal = False

    async def run(self, emit: Emit, begun: asyncio.Future[bool]) -> list[Frame]:
        # snapshots thinned as on every surface that writes them whole (SnapshotPace)
        pace = SnapshotPace() if self.partial_output else None

        async def on_event(event: RunEvent) -> None:
            self.terminal = isinstance(event, Complete | Failed)
            for shown in (event,) if pace is None else pace(event):
                # The event's own serializer: the bytes _EVENT.dump_json gives, without the
                # union's dispatch (the serve path's event_frame writes them the same way).
                await emit(shown.kind, shown.__pydantic_serializer__.to_json(shown).decode())

        envelope = await aexecute_contract(
            self.contract,
            Watched(self.adapter, begun),
            inputs=self.call.inputs,
            context=self.call.context,
            on_event=on_event,
            partial_output=self.partial_output,
        )
        return [("envelope", envelope_data(envelope))]

    def ending(self, code: str, message: str) -> list[Frame]:
        return [
            (entry.event, entry.data)
            for entry in ending(1, code, message, terminal=not self.terminal)
        ]

    async def aclose(self) -> None:
        if self.owned:
            await aclose_adapter(self.adapter)


class _Producer:
    def __init__(self, runs: Runs, run_id: str, job: Job) -> None:
        self.runs = runs
        self.run_id = run_id
        self.job = job
        self.seq = 0
        self.pending: list[LogEntry] = []
        self.flushing: asyncio.Future[None] | None = None
        self.ending: _Ending | None = None
        self.working: asyncio.Task[list[Frame]] | None = None
        self.cancelled = False
        self.begun: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def stop(self, code: str, message: str) -> None:
        if self.ending is None:
            self.ending = _Ending(code, message)
        # One task.cancel(), never again (the watch may ask more than once): a second would
        # cancel the adapter's closing of its upstream, as a cancelled anyio scope would.
        if self.working is not None and not self.cancelled:
            self.cancelled = True
            self.working.cancel()

    async def _emit(self, event: str, data: str) -> None:
        self.seq += 1
        entry = LogEntry(self.seq, event, data)
        log = self.runs.log
        if not log.coalesces:
            await log.append(self.run_id, (entry,))
            return
        # Group commit: one write in flight, carrying every frame that came meanwhile. The
        # adapter waits only when that many frames are still unwritten (the log's pace).
        self.pending.append(entry)
        flushing = self.flushing
        if flushing is None or flushing.done():
            if flushing is not None:
                flushing.result()  # a failed write ends the run here
            self.flushing = flushing = asyncio.ensure_future(self._flush())
        if len(self.pending) >= _MAX_UNWRITTEN:
            await asyncio.shield(flushing)

    async def _flush(self) -> None:
        while self.pending:
            batch, self.pending = self.pending, []
            await self.runs.log.append(self.run_id, batch)

    async def _written(self) -> None:
        """Every frame handed to the log is in it (or the write's error is raised)."""
        flushing = self.flushing
        if flushing is not None:
            self.flushing = None
            await flushing
        if self.pending:
            await self._flush()

    async def _watch(self) -> None:
        log, run_id = self.runs.log, self.run_id
        while True:
            await asyncio.sleep(log.tick)
            try:
                renewal = await log.renew(run_id)
            except EventLogError as error:
                self.stop(error.code, error.message)
                return
            if renewal.stop:
                self.stop(ErrorCode.CALLER_STOPPED, "the run was stopped (DELETE /v1/runs/{id})")
            elif not renewal.read:
                timeout = self.runs.orphan_timeout
                self.stop(ErrorCode.CALLER_STOPPED, f"no client read the run for {timeout:g} s")

    def _final(self, frames: list[Frame]) -> list[LogEntry]:
        first = self.seq + 1
        last = first + len(frames) - 1
        return [
            LogEntry(seq, event, data, final=seq == last)
            for seq, (event, data) in enumerate(frames, start=first)
        ]

    async def run(self) -> None:
        log, run_id = self.runs.log, self.run_id
        watch = asyncio.ensure_future(self._watch())
        try:
            last = None
            if self.ending is None:  # not stopped before it began
                self.working = asyncio.ensure_future(self.job.run(self._emit, self.begun))
                try:
                    last = await self.working
                except asyncio.CancelledError:
                    if not self.cancelled:
                        raise  # not a stop: this task itself was cancelled
            watch.cancel()
            await self._written()
            if last is not None and self.ending is None:
                await log.append(run_id, self._final(last))
            else:
                ended = self.ending or _Ending(ErrorCode.CALLER_STOPPED, "the run was stopped")
                await log.append(run_id, self._final(self.job.ending(ended.code, ended.message)))
        except RunClosed:
            _log.warning("run %s was ended by a reader: this process lost its lease", run_id)
        except EventLogError as error:
            # Its readers learn from their own reads; there is nowhere left to write.
            _log.error("run %s failed: %s", run_id, error.message)
        except Exception as error:  # the run's own ending, whatever went wrong
            _log.error("run %s failed", run_id, exc_info=error)
            with contextlib.suppress(Exception):
                message = f"the server failed while running the run ({type(error).__name__})"
                frames = self.job.ending(ErrorCode.RUNTIME_INVALID_RESPONSE, message)
                await log.append(run_id, self._final(frames))
        finally:
            watch.cancel()
            if self.flushing is not None:
                self.flushing.cancel()
            if not self.begun.done():
                self.begun.set_result(False)
            with anyio.CancelScope(shield=True):
                await self.job.aclose()


class Runs:
    """The runs this process produces, and the log every process reads them from."""

    def __init__(self, log: EventLog, *, orphan_timeout: float = DEFAULT_ORPHAN_TIMEOUT_S) -> None:
        self.log = log
        self.orphan_timeout = check_orphan_timeout(orphan_timeout)
        self._producers: dict[str, _Producer] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._opened: asyncio.Future[None] | None = None

    async def ready(self) -> None:
        """Open the log once, on the loop that serves (a mounted app has no lifespan)."""
        if self._opened is None:
            self._opened = asyncio.ensure_future(self.log.open())
        opened = self._opened
        try:
            await asyncio.shield(opened)
        except EventLogError:
            if self._opened is opened:
                self._opened = None  # out of reach now: the next request tries again
            raise

    async def start(self, job: Job) -> tuple[str, asyncio.Future[bool]]:
        """Start a run; its id, and a future that says ``True`` once the adapter is called
        (the call was accepted), ``False`` when the run ended before (it was refused)."""
        await self.ready()
        run_id = new_run_id()
        await self.log.create(run_id)
        await self.log.touch(run_id, self.orphan_timeout)
        producer = _Producer(self, run_id, job)
        task = asyncio.create_task(producer.run(), name=f"runport-run-{run_id}")
        self._producers[run_id] = producer
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._done(run_id, done))
        return run_id, producer.begun

    def _done(self, run_id: str, task: asyncio.Task[None]) -> None:
        self._producers.pop(run_id, None)
        self._tasks.discard(task)

    async def stop(self, run_id: str) -> bool:
        """Stop a run, here or on the process producing it; ``False`` when it has finished
        already."""
        producer = self._producers.get(run_id)
        if producer is not None:
            producer.stop(ErrorCode.CALLER_STOPPED, "the run was stopped (DELETE /v1/runs/{id})")
            return True
        await self.ready()
        state = await self.log.state(run_id)
        if state is None or state.finished:
            return False
        await self.log.request_stop(run_id)
        return True

    async def aclose(self) -> None:
        """The server stops: each run it produces ends with ``TQX_RUN_PRODUCER_LOST`` (readers
        on other processes learn at once instead of after the lease), then the log closes."""
        for producer in list(self._producers.values()):
            producer.stop(ErrorCode.RUN_PRODUCER_LOST, "the server process running the run stopped")
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
        if self._opened is not None:
            with contextlib.suppress(Exception):
                await self.log.close()
