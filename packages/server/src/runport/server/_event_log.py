"""The event-log port a resumable server writes its runs to, and its in-memory implementation.

A run's log is its SSE frames, numbered from 1 in the order they were sent, the last one
marked ``final``; the process running the run (the producer) appends them, every reader —
the connection that started the run, one that resumes it, one on another server process —
reads them by number. So a reader that was cut off asks for what follows the last number it
got, and gets each frame exactly once. The log never interprets a frame.

Liveness is the log's too. A producer holds a lease on its run and renews it; a reader that
finds the log quiet asks whether the lease still stands, and when it does not (the producer's
process died), ends the run itself with ``abandon``, atomically, so every reader sees one and
the same terminal. Readers ``touch`` the run while they read, so the producer can tell that
nobody reads it any more, and a stop asked of any process reaches the producer through
``renew``.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

from runport.contracts import ErrorCode
from runport.ports import check_seconds

DEFAULT_RETENTION_S = 300.0
"""How long a finished run stays readable (its log kept), in seconds."""

DEFAULT_LEASE_S = 5.0
"""Within how many seconds the readers of a run whose producing process died learn of it
(a shared log's lease; docs/server.md)."""


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One SSE event frame of a run: its number (from 1), its event name and its data (one
    line of JSON); ``final`` on the run's last frame."""

    seq: int
    event: str
    data: str
    final: bool = False


@dataclass(frozen=True, slots=True)
class RunState:
    """What the log holds of one run: the last frame's number (0 before any), the first
    number still held (1 unless the log was trimmed), and whether the final frame is in."""

    last_seq: int
    first_seq: int
    finished: bool


@dataclass(frozen=True, slots=True)
class LogRead:
    """A read's answer: the frames after the number asked for (possibly none), and whether
    the reader may wait for more: ``alive`` is false when the run's producer lost its lease
    (the reader then ends the run, ``abandon``), and when no frame can ever come — the log
    no longer holds the run, or the run is finished with nothing after ``after`` (the reader
    then ends with ``TQX_RUN_NOT_FOUND``)."""

    entries: Sequence[LogEntry]
    alive: bool = True


@dataclass(frozen=True, slots=True)
class Renewal:
    """A producer's renewal: whether a stop was asked for, and whether any reader touched
    the run within the time it asked to be counted (its ``hold``)."""

    stop: bool
    read: bool


class EventLogError(Exception):
    """The event log cannot be reached or used; ``code`` is ``TQX_EVENT_LOG_UNAVAILABLE``."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{ErrorCode.EVENT_LOG_UNAVAILABLE}: {message}")
        self.code = ErrorCode.EVENT_LOG_UNAVAILABLE
        self.message = message


class RunClosed(Exception):
    """An append to a run that already has its final frame: the producer lost its lease and
    a reader ended the run (``abandon``). The producer must stop."""


class EventLog(ABC):
    """Where a resumable server's runs live (docs/server.md). ``MemoryEventLog`` keeps them
    in this process; ``RedisEventLog`` in Redis Streams, shared by many server processes.

    ``tick`` is how often, in seconds, a producer renews its lease and a quiet reader asks
    whether the producer still lives. A log that ``coalesces`` takes the producer's frames in
    groups: the producer keeps one append in flight and sends every frame that arrived
    meanwhile with the next (a round trip each for Redis; in memory, one append and one
    wake-up of the readers per group instead of per frame).
    """

    tick: float
    retention: float
    coalesces: bool = False

    async def open(self) -> None:  # noqa: B027 (nothing to open is a fine default)
        """Make sure the log can be used (connect); ``EventLogError`` when it cannot."""

    async def close(self) -> None:  # noqa: B027 (nothing to close is a fine default)
        """Let go of connections; the runs stay in the log (or go, for one in memory)."""

    @abstractmethod
    async def create(self, run_id: str) -> None:
        """A new run, leased to this process, with no frame yet."""

    @abstractmethod
    async def append(self, run_id: str, entries: Sequence[LogEntry]) -> None:
        """Add the producer's next frames, numbered on from the last. ``RunClosed`` when the
        run was ended by ``abandon``; ``EventLogError`` when the log is out of reach."""

    @abstractmethod
    async def renew(self, run_id: str) -> Renewal:
        """Extend this producer's lease; say whether a stop was asked and whether a reader
        touched the run within the ``hold`` it gave."""

    @abstractmethod
    async def state(self, run_id: str) -> RunState | None:
        """The run's state, or ``None`` when the log holds no such run (never started, or
        past its retention)."""

    @abstractmethod
    async def read(self, run_id: str, after: int, *, wait: float, limit: int) -> LogRead:
        """Up to ``limit`` frames numbered after ``after``, waiting at most ``wait`` seconds
        for the first one; none when the wait ran out. A run the log no longer holds is read
        as none and not ``alive``, at once: never as a quiet run to wait for."""

    @abstractmethod
    async def touch(self, run_id: str, hold: float) -> None:
        """A reader is reading the run; it counts as read for the next ``hold`` seconds."""

    @abstractmethod
    async def request_stop(self, run_id: str) -> None:
        """Ask the run's producer, wherever it runs, to stop (it learns at its next renewal)."""

    @abstractmethod
    async def link(self, key: str, run_id: str) -> None:
        """Name ``run_id`` the current run of ``key`` (a chat), for ``retention`` seconds."""

    @abstractmethod
    async def linked(self, key: str) -> str | None:
        """The run last linked to ``key``, if the log still holds the link."""

    async def spend(self, key: str, expires: float) -> bool:
        """Record ``key`` as spent until ``expires`` (seconds since the epoch); ``False`` when
        it already was. A paused chat's continuation is spent here before it resumes, so it
        resumes once across every server that shares the log (adr/0069). This default keeps
        the keys in this log object; a log shared by processes keeps them where they all
        look."""
        spent: dict[str, float] = self.__dict__.setdefault("_spent_keys", {})
        now = time.time()
        for stale in [old for old, until in spent.items() if until <= now]:
            del spent[stale]
        if key in spent:
            return False
        spent[key] = expires
        return True

    @abstractmethod
    async def abandon(self, run_id: str, entries: Sequence[LogEntry]) -> None:
        """End a run whose producer lost its lease: append ``entries`` (the last one final)
        unless the run is finished or its lease stands — atomically, so when many readers
        try at once the run still gets one ending."""


def check_retention(seconds: float) -> float:
    checked = check_seconds(seconds, "retention")
    if checked is None:
        raise ValueError("retention must be a positive, finite number of seconds")
    return checked


@dataclass(eq=False)
class _MemoryRun:
    entries: list[LogEntry] = field(default_factory=list)
    finished_at: float | None = None
    read_until: float = 0.0
    stop: bool = False
    waiters: list[asyncio.Future[None]] = field(default_factory=list)


class MemoryEventLog(EventLog):
    """Runs kept in this process's memory: the default, for one server process. A finished
    run is dropped ``retention`` seconds after its final frame. The producer lives in the same
    process as every reader, so its lease cannot be lost; a producer that fails writes its own
    ending."""

    tick = 1.0
    coalesces = True

    def __init__(self, *, retention: float = DEFAULT_RETENTION_S) -> None:
        self.retention = check_retention(retention)
        self._runs: dict[str, _MemoryRun] = {}
        self._links: dict[str, str] = {}

    def _now(self) -> float:
        """The clock retention and reads are measured by."""
        return time.monotonic()

    def _sweep(self, now: float) -> None:
        expired = [
            run_id
            for run_id, run in self._runs.items()
            if run.finished_at is not None and now - run.finished_at > self.retention
        ]
        for run_id in expired:
            del self._runs[run_id]
        if expired:
            self._links = {k: r for k, r in self._links.items() if r in self._runs}

    def _run(self, run_id: str) -> _MemoryRun | None:
        run = self._runs.get(run_id)
        finished_at = None if run is None else run.finished_at
        if finished_at is not None and self._now() - finished_at > self.retention:
            del self._runs[run_id]
            return None
        return run

    async def create(self, run_id: str) -> None:
        now = self._now()
        self._sweep(now)
        self._runs[run_id] = _MemoryRun()

    async def append(self, run_id: str, entries: Sequence[LogEntry]) -> None:
        run = self._runs.get(run_id)
        if run is None or run.finished_at is not None:
            raise RunClosed(run_id)
        self._add(run, entries)

    def _add(self, run: _MemoryRun, entries: Sequence[LogEntry]) -> None:
        expected = len(run.entries) + 1
        for entry in entries:
            if entry.seq != expected:
                raise ValueError(f"frame {entry.seq} appended where {expected} was due")
            expected += 1
        run.entries.extend(entries)
        if entries and entries[-1].final:
            run.finished_at = self._now()
        waiters, run.waiters = run.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def renew(self, run_id: str) -> Renewal:
        run = self._runs.get(run_id)
        if run is None:
            return Renewal(stop=True, read=False)
        return Renewal(stop=run.stop, read=self._now() < run.read_until)

    async def state(self, run_id: str) -> RunState | None:
        run = self._run(run_id)
        if run is None:
            return None
        return RunState(
            last_seq=len(run.entries), first_seq=1, finished=run.finished_at is not None
        )

    async def read(self, run_id: str, after: int, *, wait: float, limit: int) -> LogRead:
        run = self._run(run_id)
        if run is None or (run.finished_at is not None and len(run.entries) <= after):
            return LogRead((), alive=False)  # nothing can ever come: not a run to wait for
        if len(run.entries) <= after and run.finished_at is None and wait > 0:
            loop = asyncio.get_running_loop()
            waiter = loop.create_future()
            run.waiters.append(waiter)
            timer = loop.call_later(wait, _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
        return LogRead(run.entries[after : after + limit])

    async def touch(self, run_id: str, hold: float) -> None:
        run = self._runs.get(run_id)
        if run is not None:
            run.read_until = max(run.read_until, self._now() + hold)

    async def request_stop(self, run_id: str) -> None:
        run = self._runs.get(run_id)
        if run is not None:
            run.stop = True

    async def link(self, key: str, run_id: str) -> None:
        self._links[key] = run_id

    async def linked(self, key: str) -> str | None:
        run_id = self._links.get(key)
        if run_id is not None and self._run(run_id) is None:
            del self._links[key]
            return None
        return run_id

    async def abandon(self, run_id: str, entries: Sequence[LogEntry]) -> None:
        # In one process the producer cannot vanish without its task ending the run itself.
        return None

    async def close(self) -> None:
        for run in self._runs.values():
            for waiter in run.waiters:
                if not waiter.done():
                    waiter.set_result(None)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
