from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter

from runport.application import Catalog, load_catalog
from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    OperationEnvelope,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    Usage,
)
from runport.core import build_receipt
from runport.mock import AsyncEmitter, AsyncFunctionRuntime
from runport.ports import AsyncRuntimeAdapter, AsyncSink, deliver

HERE = Path(__file__).parent
CONTRACTS = HERE / "contracts"
SCENARIO = HERE / "scenarios" / "story.yaml"
EVENT: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)


def catalog() -> Catalog:
    return load_catalog(CONTRACTS, warn=print)


class PacedUpstream:
    """A model the test drives: it sends one piece of text each time the test releases one,
    and records whether its call was cancelled (the async port's "close the upstream")."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self._allowed = 0
        self._lock = threading.Lock()
        self.started = threading.Event()
        self.closed = threading.Event()
        self.calls = 0

    def release(self, count: int = 1) -> None:
        with self._lock:
            self._allowed += count

    def release_all(self) -> None:
        self.release(len(self.pieces))

    def _may_send(self, index: int) -> bool:
        with self._lock:
            return self._allowed > index

    async def handler(self, request: ExecutionRequest, emit: AsyncEmitter) -> None:
        self.calls += 1
        self.started.set()
        try:
            for index, piece in enumerate(self.pieces):
                while not self._may_send(index):
                    await asyncio.sleep(0.005)
                await emit.text(piece)
            await emit.finish("stop")
        except asyncio.CancelledError:
            self.closed.set()
            raise

    def adapter(self) -> AsyncFunctionRuntime:
        return AsyncFunctionRuntime(self.handler)


class Thinking(AsyncRuntimeAdapter):
    """A model that reasons (each of ``thinking`` a ``ReasoningDelta``), then answers (each of
    ``answer`` a ``Delta``); its receipt keeps the reasoning as one block."""

    DESCRIPTOR = AdapterDescriptor(
        id="thinking", version="0.1.0", capabilities=["streaming", "text"]
    )

    def __init__(self, thinking: list[str], answer: list[str]) -> None:
        self.thinking = thinking
        self.answer = answer

    def descriptor(self) -> AdapterDescriptor:
        return self.DESCRIPTOR

    def receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        return build_receipt(
            request,
            adapter=self.DESCRIPTOR,
            text="".join(self.answer),
            finish_reason="stop",
            usage=Usage(input_tokens=3, output_tokens=11, reasoning_tokens=8),
            reasoning=[ReasoningPart(text="".join(self.thinking))],
        )

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.receipt(request)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        for piece in self.thinking:
            await deliver(sink, ReasoningDelta(text=piece))
        for piece in self.answer:
            await deliver(sink, Delta(text=piece))
        receipt = self.receipt(request)
        await deliver(sink, Complete(receipt=receipt))
        return receipt


def parse_sse(text: str) -> list[tuple[str, str]]:
    """(event name, data) per event, read the way a browser's EventSource reads them."""
    events: list[tuple[str, str]] = []
    name, data = "message", []
    for line in text.split("\n"):
        if line == "":
            if data:
                events.append((name, "\n".join(data)))
            name, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
    return events


def split_stream(frames: list[tuple[str, str]]) -> tuple[list[StreamEvent], OperationEnvelope]:
    """The stream events, checked against their event names, and the closing envelope."""
    assert frames
    assert frames[-1][0] == "envelope", frames
    events = [EVENT.validate_json(data) for _, data in frames[:-1]]
    assert [name for name, _ in frames[:-1]] == [event.kind for event in events]
    return events, OperationEnvelope.model_validate_json(frames[-1][1])


@pytest.fixture
def paced() -> Iterator[PacedUpstream]:
    upstream = PacedUpstream(["Once ", "upon ", "a ", "time."])
    yield upstream
    upstream.release(100)


def still_serving(client: httpx.Client) -> None:
    assert client.get("/v1/contracts").status_code == 200


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One Chromium for the whole session, whichever browser tests it runs (Playwright's
    sync API drives one at a time); only the browser tests ask for it."""
    from .browser import chromium_context

    with chromium_context() as context:
        yield context
