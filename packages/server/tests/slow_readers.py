"""Readers that read slowly, and an event log that proves none of them holds the loop.

``LoopWatch`` wraps a real event log (in memory or Redis): beside it, on the serving loop, a
watchdog coroutine counts the times it is scheduled, and every read checks that the watchdog
ran since the same task's last reads. A read loop that reads again and again without letting
the loop run anything else is caught after ``MAX_READS_UNYIELDED`` reads — structurally, never
by timing — and made to fail (an exception, so the reader ends instead of spinning for ever).

``SlowReader`` is one HTTP client of a run on a bare socket with a small receive buffer: while
the test does not read, the server's writes to it back up and its reader stalls mid-run.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from runport.contracts import ErrorCode
from runport.mock import AsyncFunctionRuntime
from runport.server import (
    EventLog,
    LogEntry,
    LogRead,
    MemoryEventLog,
    Renewal,
    RunState,
)

from .conftest import PacedUpstream
from .sse_frames import STORY, Frame, frames

MAX_READS_UNYIELDED = 3
"""The most reads one task may make between two runs of the watchdog: a reader's one read
a round, and the two of a round that finds its producer lost (``_abandon``)."""

BOUND_S = 30.0
"""How long the test waits, at most, for a reader that should end at once."""


class LoopHeld(Exception):
    """A task read the log more than ``MAX_READS_UNYIELDED`` times without the loop running
    anything else."""


class LoopWatch(EventLog):
    """``inner``, with every read checked against a watchdog on the loop that serves."""

    def __init__(self, inner: EventLog) -> None:
        self.inner = inner
        self.tick = inner.tick
        self.retention = inner.retention
        self.coalesces = inner.coalesces
        self.ticks = 0
        self.reads = 0
        self.held: list[str] = []
        self._seen: dict[asyncio.Task[object] | None, tuple[int, int]] = {}
        self._watchdog: asyncio.Task[None] | None = None

    async def _watch(self) -> None:
        while True:
            self.ticks += 1
            await asyncio.sleep(0)

    async def open(self) -> None:
        if self._watchdog is None:  # on the loop that serves: the server opens its log there
            self._watchdog = asyncio.ensure_future(self._watch())
        await self.inner.open()

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        await self.inner.close()

    async def read(self, run_id: str, after: int, *, wait: float, limit: int) -> LogRead:
        self.reads += 1
        task = asyncio.current_task()
        tick, streak = self._seen.get(task, (-1, 0))
        streak = streak + 1 if tick == self.ticks else 1
        self._seen[task] = (self.ticks, streak)
        if streak > MAX_READS_UNYIELDED:
            self.held.append(f"{streak} reads of run {run_id} after {after}, the loop held")
            raise LoopHeld(self.held[-1])
        return await self.inner.read(run_id, after, wait=wait, limit=limit)

    async def create(self, run_id: str) -> None:
        await self.inner.create(run_id)

    async def append(self, run_id: str, entries: Sequence[LogEntry]) -> None:
        await self.inner.append(run_id, entries)

    async def renew(self, run_id: str) -> Renewal:
        return await self.inner.renew(run_id)

    async def state(self, run_id: str) -> RunState | None:
        return await self.inner.state(run_id)

    async def touch(self, run_id: str, hold: float) -> None:
        await self.inner.touch(run_id, hold)

    async def request_stop(self, run_id: str) -> None:
        await self.inner.request_stop(run_id)

    async def link(self, key: str, run_id: str) -> None:
        await self.inner.link(key, run_id)

    async def linked(self, key: str) -> str | None:
        return await self.inner.linked(key)

    async def abandon(self, run_id: str, entries: Sequence[LogEntry]) -> None:
        await self.inner.abandon(run_id, entries)


class ClockedMemoryLog(MemoryEventLog):
    """The in-memory log on a clock the test moves on: ``expire`` is its retention passing."""

    def __init__(self, *, retention: float) -> None:
        super().__init__(retention=retention)
        self.offset = 0.0

    def _now(self) -> float:
        return time.monotonic() + self.offset

    def expire(self) -> None:
        self.offset += self.retention + 1


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def _request(method: str, path: str, host: str, body: bytes) -> bytes:
    head = [f"{method} {path} HTTP/1.1", f"Host: {host}", "Accept: text/event-stream"]
    if body:
        head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _dechunked(raw: bytes) -> bytes:
    """A chunked body's bytes, up to where it was cut if it was (a server that failed)."""
    out, pos = bytearray(), 0
    while True:
        line_end = raw.find(b"\r\n", pos)
        if line_end < 0:
            return bytes(out)
        size = int(raw[pos:line_end].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += raw[line_end + 2 : line_end + 2 + size]
        pos = line_end + 2 + size + 2


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    got: list[Frame] = field(default_factory=list)


class SlowReader:
    """One request on a socket whose receive buffer is small, read only when the test says."""

    def __init__(self, url: str, method: str, path: str, body: object = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        self.sock.settimeout(BOUND_S)
        self.sock.connect(_address(url))
        payload = b"" if body is None else json.dumps(body).encode()
        self.sock.sendall(_request(method, path, url.removeprefix("http://"), payload))
        self.raw = bytearray()

    def head(self) -> dict[str, str]:
        """Read until the response head is in (the reader sends it at once)."""
        while b"\r\n\r\n" not in self.raw:
            chunk = self.sock.recv(4096)
            assert chunk, f"the connection closed before the head: {bytes(self.raw)!r}"
            self.raw += chunk
        return self._parse_head()[1]

    def _parse_head(self) -> tuple[int, dict[str, str], int]:
        end = self.raw.index(b"\r\n\r\n")
        lines = bytes(self.raw[:end]).decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(lines[0].split(" ")[1]), headers, end + 4

    def nibble(self, count: int) -> None:
        """Read at most ``count`` bytes of what has arrived, without waiting for any."""
        self.sock.setblocking(False)  # with a timeout set, recv would wait for data
        try:
            self.raw += self.sock.recv(count)
        except BlockingIOError:
            pass
        finally:
            self.sock.settimeout(BOUND_S)

    def drain(self) -> Answer:
        """Everything until the server ends the response (or fail after ``BOUND_S``)."""
        try:
            while not self._ended():
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    break
                self.raw += chunk
        except TimeoutError:
            raise AssertionError(f"the reader never ended: {bytes(self.raw[-300:])!r}") from None
        except ConnectionResetError:
            pass
        finally:
            self.sock.close()
        status, headers, start = self._parse_head()
        body = bytes(self.raw[start:])
        if headers.get("transfer-encoding") == "chunked":
            body = _dechunked(body)
        answer = Answer(status, headers, body)
        if status == 200:
            answer.got = list(frames(iter(body.decode().split("\n"))))
        return answer

    def _ended(self) -> bool:
        if b"\r\n\r\n" not in self.raw:
            return False
        _, headers, start = self._parse_head()
        if headers.get("transfer-encoding") == "chunked":
            return self.raw.endswith(b"0\r\n\r\n")
        length = headers.get("content-length")
        return length is not None and len(self.raw) - start >= int(length)


def check_ended(answer: Answer, run_id: str, after: int) -> str:
    """A reader's whole answer: every frame of the run after ``after``, numbered on, and then
    the run's own ending (its envelope) or ``TQX_RUN_NOT_FOUND`` (unnumbered) when the log
    no longer held the run. Returns how it ended: ``"ended"`` or ``"not found"``."""
    got = answer.got
    numbered = [frame for frame in got if frame.id is not None]
    assert [frame.id for frame in numbered] == [
        f"{run_id}:{seq}" for seq in range(after + 1, after + 1 + len(numbered))
    ], [frame.id for frame in numbered]
    assert got, "the reader got nothing, not even an ending"
    if got[-1].id is not None:
        assert got[-1].event == "envelope", got[-1]
        assert got == numbered
        return "ended"
    failed, envelope = got[-2:]
    assert (failed.id, failed.event, envelope.id, envelope.event) == (
        None,
        "Failed",
        None,
        "envelope",
    ), got[-2:]
    assert json.loads(failed.data)["code"] == ErrorCode.RUN_NOT_FOUND
    assert got[:-2] == numbered
    return "not found"


@dataclass
class Upstreams:
    """The model of the run each example starts: a ``PacedUpstream`` the example replaces."""

    current: PacedUpstream | None = None

    def adapter(self) -> AsyncFunctionRuntime:
        assert self.current is not None
        return self.current.adapter()


INPUTS = {"inputs": {"topic": "ships"}}

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("release"), st.integers(1, 4)),
        st.tuples(st.just("expire"), st.just(0)),
        st.tuples(st.just("nibble"), st.integers(0, 5), st.sampled_from([200, 5_000, 70_000])),
        st.tuples(st.just("open"), st.integers(0, 6)),
    ),
    max_size=14,
)
"""What happens to a run and its readers, in any order: the model sends more, the log's
retention passes, a reader reads a little, a reader resumes after some frame."""

SIZES = st.lists(st.sampled_from([8, 30_000]), min_size=1, max_size=10)
"""The run's pieces: small, or big enough to back a slow reader's socket up."""


def drive(
    url: str,
    upstreams: Upstreams,
    log: LoopWatch,
    expire: Callable[[str], None],
    sizes: list[int],
    ops: list[tuple[Any, ...]],
) -> list[str]:
    """One run, its readers and ``ops`` in order; then the model finishes and every reader is
    read to its end, which each must reach, with no read loop ever holding the loop."""
    upstream = PacedUpstream(["x" * size for size in sizes])
    upstreams.current = upstream
    first = SlowReader(url, "POST", STORY, INPUTS)
    run_id = first.head()["x-runport-run-id"]
    readers = [(first, 0)]
    try:
        for op in ops:
            if op[0] == "release":
                upstream.release(op[1])
            elif op[0] == "expire":
                expire(run_id)
            elif op[0] == "nibble":
                readers[op[1] % len(readers)][0].nibble(op[2])
            else:
                path = f"/v1/runs/{run_id}/events?after={op[1]}"
                readers.append((SlowReader(url, "GET", path), op[1]))
    finally:
        upstream.release_all()
    endings = []
    for reader, after in readers:
        answer = reader.drain()
        if answer.status == 200:
            endings.append(check_ended(answer, run_id, after))
        else:
            code = json.loads(answer.body)["error"]["code"] if answer.body else None
            assert (answer.status, code) in {
                (204, None),
                (400, ErrorCode.DATA_INVALID),  # resumed after a frame not sent yet
                (404, ErrorCode.RUN_NOT_FOUND),  # resumed after the run expired
            }, (answer.status, answer.body)
            endings.append(str(answer.status))
    assert log.held == []
    return endings
