"""What the provider did itself reaches an MCP client as it happens: each server tool call and
result, citation and generated file is a progress notification of its own, in stream order,
before the result (adr/0055-what-the-provider-did-itself.md)."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp import Client

from runport.contracts import (
    Citation,
    CitationSource,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    FileDelta,
    FilePart,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
)
from runport.core import build_receipt
from runport.ports import RuntimeAdapter, Sink

from .test_server import DESCRIPTOR, ECHO, envelope_of, served

PNG = "iVBORw0KGgoAAAAAAAAAAA=="
CALL = ServerToolCall(call_id="srv_1", name="web_search", input={"query": "rivers"})
RESULT = ServerToolResult(call_id="srv_1", name="web_search", output=[{"url": "https://a.io"}])
CITED = Citation(source=CitationSource(type="url", url="https://a.io"), start=0, end=6)


class Searches(RuntimeAdapter):
    """Searches at the provider, answers citing what it found, and draws a picture."""

    def descriptor(self) -> Any:
        return DESCRIPTOR

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.execute_streaming(request, lambda event: None)

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        events: list[StreamEvent] = [
            CALL, RESULT, Delta(text="Rivers run downhill."), CITED,
            FileDelta(media_type="image/png", data=PNG),
        ]  # fmt: skip
        for event in events:
            sink(event)
        receipt = build_receipt(
            request,
            adapter=DESCRIPTOR,
            text="Rivers run downhill.",
            finish_reason="stop",
            server_tools=[CALL, RESULT],
            citations=[CITED],
            files=[FilePart(media_type="image/png", data=PNG)],
        )
        sink(Complete(receipt=receipt))
        return receipt


def test_server_tools_citations_and_files_go_out_as_progress() -> None:
    progress: list[tuple[float, str | None]] = []

    async def record(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def body(client: Client) -> Any:
        result = await client.call_tool(
            "execute_contract", {**ECHO, "stream": True}, progress_callback=record
        )
        await anyio.wait_all_tasks_blocked()
        return result

    envelope = envelope_of(served(Searches, body, mode="auto"))
    progress.sort()
    events = [json.loads(message) for _, message in progress if message]
    assert [event["kind"] for event in events] == [
        "ServerToolCall", "ServerToolResult", "Delta", "Citation", "FileDelta", "Complete",
    ]  # fmt: skip
    assert events[0] == CALL.model_dump(mode="json")
    assert events[3]["source"] == {"type": "url", "url": "https://a.io"}
    assert envelope.result is not None
    assert envelope.result.server_tools == [CALL, RESULT]
