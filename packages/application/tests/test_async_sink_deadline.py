"""An ``on_event`` that never returns cannot hold an async call past its adapter's deadline
(issue 22, item 10): ``aexecute_contract``, ``arun_stream`` and ``astream`` over
``AsyncOpenAIChatAdapter`` and a loopback upstream that streams for ever, at a 1 s deadline.

Each call ends with ``TQX_RUNTIME_TIMEOUT``, the upstream closed, exactly one terminal event and
the text that reached the caller as the partial. No timing is asserted: a guard only turns a
call that would hang into a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import Iterator

import pytest

from runport.application import RunError, aexecute_contract, arun_stream, astream
from runport.contracts import Delta, Failed, StreamEvent
from runport.core import Contract, parse_contract
from runport.openai import AsyncOpenAIChatAdapter

GUARD = 10.0
"""Seconds after which a call is taken to hang (far past the deadline and the grace)."""

CONTRACT: Contract = parse_contract(
    {
        "api_version": "runport/v1alpha1",
        "id": "app.held",
        "version": "1.0.0",
        "messages": [{"role": "user", "content": [{"kind": "text", "value": "Talk."}]}],
        "output_schema": {"type": "string"},
    }
)


class EndlessChat:
    """A loopback OpenAI-compatible server whose every answer is ``"x"`` deltas, one every
    50 ms, until the client closes the connection."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            sock, _ = self._listener.accept()
            with sock:
                reader = sock.makefile("rb")
                length = 0
                while (line := reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                reader.read(length)
                sock.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
                chunk = {"choices": [{"index": 0, "delta": {"content": "x"}}]}
                frame = f"data: {json.dumps(chunk)}\n\n".encode()
                while not self.closed.is_set():
                    try:
                        sock.sendall(b"%x\r\n%s\r\n" % (len(frame), frame))
                    except OSError:
                        break
                    self.closed.wait(0.05)
        self.closed.set()

    def close(self) -> None:
        self.closed.set()
        self._listener.close()
        self._thread.join(5)


@pytest.fixture
def upstream() -> Iterator[EndlessChat]:
    server = EndlessChat()
    try:
        yield server
    finally:
        server.close()


def adapter_for(upstream: EndlessChat) -> AsyncOpenAIChatAdapter:
    return AsyncOpenAIChatAdapter(
        base_url=upstream.base_url, model="m", api_key="sk-test", deadline=1.0
    )


def test_aexecute_contract_returns_at_its_deadline(upstream: EndlessChat) -> None:
    async def main() -> None:
        seen: list[StreamEvent] = []
        never = asyncio.Event()

        async def sink(event: StreamEvent) -> None:
            seen.append(event)
            await never.wait()

        async with adapter_for(upstream) as adapter, asyncio.timeout(GUARD):
            envelope = await aexecute_contract(CONTRACT, adapter, on_event=sink)
        assert not envelope.ok
        assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_TIMEOUT"]
        assert [event.kind for event in seen] == ["Delta", "Failed"]
        assert envelope.stream_events == seen

    asyncio.run(main())
    assert upstream.closed.is_set()


def test_arun_stream_returns_at_its_deadline_with_the_partial(upstream: EndlessChat) -> None:
    async def main() -> None:
        seen: list[StreamEvent] = []
        never = asyncio.Event()

        async def sink(event: StreamEvent) -> None:
            seen.append(event)
            await never.wait()

        async with adapter_for(upstream) as adapter, asyncio.timeout(GUARD):
            with pytest.raises(RunError) as raised:
                await arun_stream(CONTRACT, adapter, on_event=sink)
        assert raised.value.code == "TQX_RUNTIME_TIMEOUT"
        assert raised.value.partial.text == "x"
        assert [event.kind for event in seen] == ["Delta", "Failed"]
        assert isinstance(seen[-1], Failed)
        assert seen[-1].code == "TQX_RUNTIME_TIMEOUT"

    asyncio.run(main())
    assert upstream.closed.is_set()


def test_astream_read_too_slowly_still_ends_in_one_terminal_event(upstream: EndlessChat) -> None:
    """The reader takes one event, then waits until the upstream is closed: the turn's
    hand-overs were cut off at its deadline, and the iterator still yields every event the
    envelope records, the ``Failed`` last."""

    async def main() -> None:
        async with adapter_for(upstream) as adapter, asyncio.timeout(GUARD):
            got: list[StreamEvent] = []
            async with astream(CONTRACT, adapter) as events:
                async for event in events:
                    got.append(event)
                    if len(got) == 1:
                        await asyncio.to_thread(upstream.closed.wait, GUARD)
            envelope = events.envelope
        assert got == envelope.stream_events
        assert isinstance(got[0], Delta)
        assert [event for event in got if not isinstance(event, Delta)] == [got[-1]]
        assert isinstance(got[-1], Failed)
        assert got[-1].code == "TQX_RUNTIME_TIMEOUT"
        assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_TIMEOUT"]

    asyncio.run(main())
