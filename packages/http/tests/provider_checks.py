"""Shared by the tests of every provider codec on this layer (``runport.anthropic``,
``runport.gemini``): requests to send, loopback replies, the parsed request a server saw, and a
streamed call checked against the streaming law as its events arrive.

Provider packages' ``conftest.py`` put this folder on ``sys.path`` (they depend on
``runport-http``, so its test doubles are theirs to use too).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from http_faults import SSE, Connection, FaultServer, Handler, head

from runport.contracts import (
    CompiledInteraction,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    Message,
    StreamEvent,
    ToolCallDelta,
    ToolSpec,
)
from runport.core import StreamAssembler
from runport.ports import AsyncRuntimeAdapter, PortError, RuntimeAdapter


def wired(upstream: Any) -> dict[str, Any]:
    """The upstream's address, model, planted key and read timeout, as both flavours take
    them."""
    return {
        "base_url": upstream.base_url,
        "model": upstream.model,
        "api_key": upstream.api_key,
        "timeout": upstream.read_timeout,
    }


TEXT_SCHEMA: dict[str, Any] = {"type": "string"}
OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
}
WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def make_request(
    schema: dict[str, Any] | None = None,
    *,
    messages: list[Message] | None = None,
    tools: list[ToolSpec] | None = None,
    runtime_policy: dict[str, Any] | None = None,
) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test/0",
            contract_id="provider-test",
            contract_version="1.0.0",
            messages=messages or [Message(role="user", content="Say hello.")],
            output_schema=TEXT_SCHEMA if schema is None else schema,
            runtime_policy=runtime_policy or {},
            tools=tools,
        )
    )


# --- what the server saw, and what it answers ----------------------------------------------


@dataclass(frozen=True)
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: Any


def seen(server: FaultServer, index: int = -1) -> Seen:
    head_bytes, _, body = server.requests[index].partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Seen(method, target, headers, json.loads(body) if body else None)


def stream_reply(events: Sequence[bytes], *, headers: dict[str, str] | None = None) -> Handler:
    """Each item one HTTP chunk of a chunked event-stream response; the connection is kept."""

    def handler(connection: Connection, request: bytes) -> bool:
        connection.write(head("200 OK", {**SSE, **(headers or {})}))
        for piece in events:
            if piece:
                connection.chunk(piece)
        connection.write(b"0\r\n\r\n")
        return True

    return handler


def trickle(first: bytes, piece: bytes, every: float = 0.005) -> Handler:
    """An event stream that opens with ``first`` and then sends ``piece`` every ``every``
    seconds until the client goes (a provider still generating)."""

    def handler(connection: Connection, request: bytes) -> bool:
        connection.write(head("200 OK", SSE))
        connection.chunk(first)
        while connection.chunk(piece):
            time.sleep(every)
        return False

    return handler


def json_reply(body: Any, status: str = "200 OK", headers: dict[str, str] | None = None) -> Handler:
    data = json.dumps(body).encode() if not isinstance(body, bytes) else body

    def handler(connection: Connection, request: bytes) -> bool:
        connection.write(
            head(
                status,
                {
                    "Content-Type": "application/json",
                    "Content-Length": str(len(data)),
                    **(headers or {}),
                },
            )
            + data
        )
        return True

    return handler


@contextmanager
def serving(*handlers: Handler) -> Iterator[FaultServer]:
    """A loopback server playing ``handlers[n]`` for request *n*, closed on leaving."""
    server = FaultServer(list(handlers))
    try:
        yield server
    finally:
        server.close()


class Playback:
    """A loopback upstream whose answer a test swaps per example (``answer``), so a property
    test serves each example's bytes without a server per example."""

    def __init__(self) -> None:
        self.answer: Handler = stream_reply([])
        self.server = FaultServer([self._handler])
        self.base_url = self.server.base_url.removesuffix("/v1")

    def _handler(self, connection: Connection, request: bytes) -> bool:
        return self.answer(connection, request)


@pytest.fixture(scope="module")
def playback() -> Iterator[Playback]:
    player = Playback()
    yield player
    player.server.close()


def rechunk(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    """``data`` cut at the given offsets (any order, duplicates and out-of-range ignored)."""
    points = sorted({cut for cut in cuts if 0 < cut < len(data)})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


# --- the streaming law, checked on every streamed call -------------------------------------


@dataclass
class Outcome:
    events: list[StreamEvent]
    receipt: ExecutionReceipt | None = None
    error: PortError | None = None

    @property
    def text(self) -> str:
        return "".join(event.text for event in self.events if isinstance(event, Delta))

    @property
    def tool_deltas(self) -> list[ToolCallDelta]:
        return [event for event in self.events if isinstance(event, ToolCallDelta)]


def _judged(assembler: StreamAssembler, receipt: Any, failure: PortError | None) -> Outcome:
    terminal = assembler.terminal
    if failure is not None:
        assert isinstance(terminal, Failed), f"raised {failure!r} but the terminal is {terminal!r}"
        assert (terminal.code, terminal.message) == (failure.code, failure.message)
        return Outcome(assembler.events, error=failure)
    assert isinstance(terminal, Complete), f"returned, but the terminal is {terminal!r}"
    assert terminal.receipt == receipt
    assert assembler.assembly_problems(receipt) == []
    return Outcome(assembler.events, receipt=receipt)


def run_streamed(adapter: RuntimeAdapter, request: ExecutionRequest) -> Outcome:
    """``execute_streaming`` with a sink that checks the grammar as events arrive (law 1),
    then the terminal against the outcome (laws 2, 3 and 5)."""
    assembler = StreamAssembler()
    try:
        receipt = adapter.execute_streaming(request, assembler.feed)
    except PortError as error:
        return _judged(assembler, None, error)
    return _judged(assembler, receipt, None)


def run_streamed_async(adapter: AsyncRuntimeAdapter, request: ExecutionRequest) -> Outcome:
    """``run_streamed`` for an async adapter, on a fresh event loop; the adapter's client
    for that loop is released before the loop ends."""

    async def main() -> Outcome:
        assembler = StreamAssembler()
        try:
            receipt = await adapter.execute_streaming(request, assembler.feed)
        except PortError as error:
            return _judged(assembler, None, error)
        finally:
            await adapter.aclose()  # type: ignore[attr-defined]
        return _judged(assembler, receipt, None)

    return asyncio.run(main())
