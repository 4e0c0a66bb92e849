"""What the provider did itself, scripted: ``server_tool_call``, ``server_tool_result``,
``citation`` and ``file_delta`` scenario events play as ``ServerToolCall``,
``ServerToolResult``, ``Citation`` and ``FileDelta`` and are kept on the receipt, streamed and
unstreamed alike; a ``FunctionRuntime`` handler says the same with ``emit.server_tool_call``,
``server_tool_result``, ``citation`` and ``file`` (docs/scenarios.md,
adr/0055-what-the-provider-did-itself.md)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from runport.contracts import (
    Citation,
    CitationSource,
    Complete,
    ErrorCode,
    ExecutionRequest,
    Failed,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
)
from runport.core import Scenario, ScenarioError, StreamAssembler, parse_scenario
from runport.mock import (
    AsyncEmitter,
    AsyncFunctionRuntime,
    AsyncScriptedRuntime,
    Emitter,
    FunctionRuntime,
    ScriptedRuntime,
    TurnUsageError,
)
from runport.ports import PortError

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x04" * 12).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff" + b"\x04" * 12).decode()


def v1(*events: dict[str, Any]) -> Scenario:
    turn = {"events": [*events, {"kind": "finish"}]}
    return parse_scenario({"api_version": "runport.mock/v1", "id": "did", "turns": [turn]})


SEARCHED = v1(
    {"kind": "server_tool_call", "call_id": "srv_1", "name": "web_search", "input": {"q": "x"}},
    {"kind": "server_tool_result", "call_id": "srv_1", "output": [{"url": "https://a.io"}]},
    {"kind": "delta", "text": "Found "},
    {"kind": "delta", "text": "it."},
    {"kind": "citation", "source": {"type": "url", "url": "https://a.io"}, "start": 0, "end": 9},
    {"kind": "file_delta", "media_type": "image/png", "data": PNG, "partial": True},
    {"kind": "file_delta", "media_type": "image/png", "data": PNG},
)


def test_every_new_kind_is_played_and_kept(text_request: ExecutionRequest) -> None:
    events: list[StreamEvent] = []
    receipt = ScriptedRuntime(SEARCHED).execute_streaming(text_request, events.append)
    assert [event.kind for event in events] == [
        "ServerToolCall", "ServerToolResult", "Delta", "Delta", "Citation", "FileDelta",
        "FileDelta", "Complete",
    ]  # fmt: skip
    assert receipt.server_tools == [
        ServerToolCall(call_id="srv_1", name="web_search", input={"q": "x"}),
        ServerToolResult(call_id="srv_1", name="web_search", output=[{"url": "https://a.io"}]),
    ]
    source = CitationSource(type="url", url="https://a.io")
    assert receipt.citations == [Citation(source=source, start=0, end=9)]
    assert receipt.files is not None
    assert [part.data for part in receipt.files] == [PNG]  # the preview is not kept
    assembler = StreamAssembler()
    for event in events:
        assembler.feed(event)
    assert assembler.assembly_problems(receipt) == []
    assert ScriptedRuntime(SEARCHED).execute(text_request) == receipt
    assert asyncio.run(AsyncScriptedRuntime(SEARCHED).execute(text_request)) == receipt


@pytest.mark.parametrize(
    ("events", "said"),
    [
        ([{"kind": "server_tool_result", "call_id": "s"}], "no server tool call before"),
        (
            [
                {"kind": "server_tool_call", "call_id": "s", "name": "w"},
                {"kind": "server_tool_call", "call_id": "s", "name": "w"},
            ],
            "announced twice",
        ),
        ([{"kind": "citation", "source": {"type": "web"}}], "source"),
        ([{"kind": "citation", "source": {"type": "url"}, "start": 4, "end": 1}], "before"),
    ],
)
def test_a_scenario_that_breaks_the_rules_is_refused_when_read(
    events: list[dict[str, Any]], said: str
) -> None:
    with pytest.raises(ScenarioError, match=said):
        v1(*events)


def test_a_file_that_is_not_its_media_type_fails_the_turn_coded(
    text_request: ExecutionRequest,
) -> None:
    scenario = v1({"kind": "file_delta", "media_type": "image/png", "data": JPEG})
    events: list[StreamEvent] = []
    with pytest.raises(PortError) as raised:
        ScriptedRuntime(scenario).execute_streaming(text_request, events.append)
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert isinstance(events[-1], Failed)
    assert events[-1].code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_a_citation_past_the_text_fails_the_turn_coded(text_request: ExecutionRequest) -> None:
    scenario = v1(
        {"kind": "delta", "text": "ok"},
        {"kind": "citation", "source": {"type": "url"}, "start": 0, "end": 40},
    )
    with pytest.raises(PortError) as raised:
        ScriptedRuntime(scenario).execute(text_request)
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def test_a_file_counts_against_max_response_bytes(text_request: ExecutionRequest) -> None:
    scenario = v1({"kind": "file_delta", "media_type": "image/png", "data": PNG})
    events: list[StreamEvent] = []
    runtime = ScriptedRuntime(scenario, max_response_bytes=len(PNG) - 1)
    with pytest.raises(PortError) as raised:
        runtime.execute_streaming(text_request, events.append)
    assert raised.value.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE
    assert not any(isinstance(event, Complete) for event in events)


def searched(request: ExecutionRequest, emit: Emitter) -> None:
    """``SEARCHED``, said by a handler: the same events, in the same order."""
    emit.server_tool_call("web_search", {"q": "x"}, call_id="srv_1")
    emit.server_tool_result("srv_1", [{"url": "https://a.io"}])
    emit.text("Found ")
    emit.text("it.")
    emit.citation("https://a.io", start=0, end=9)
    emit.file("image/png", base64.b64decode(PNG), partial=True)
    emit.file("image/png", PNG)  # base64, as a provider sends it
    emit.finish()


async def searched_async(request: ExecutionRequest, emit: AsyncEmitter) -> None:
    await emit.server_tool_call("web_search", {"q": "x"}, call_id="srv_1")
    await emit.server_tool_result("srv_1", [{"url": "https://a.io"}])
    await emit.text("Found ")
    await emit.text("it.")
    await emit.citation("https://a.io", start=0, end=9)
    await emit.file("image/png", base64.b64decode(PNG), partial=True)
    await emit.file("image/png", PNG)
    await emit.finish()


def test_a_handler_emits_what_a_scenario_plays(text_request: ExecutionRequest) -> None:
    scripted: list[StreamEvent] = []
    expected = ScriptedRuntime(SEARCHED).execute_streaming(text_request, scripted.append)
    emitted: list[StreamEvent] = []
    runtime = FunctionRuntime(searched)
    receipt = runtime.execute_streaming(text_request, emitted.append)
    assert emitted[:-1] == scripted[:-1]  # the terminals differ in the adapter only
    assert receipt.model_dump(exclude={"adapter"}) == expected.model_dump(exclude={"adapter"})
    async_runtime = AsyncFunctionRuntime(searched_async)
    assert asyncio.run(async_runtime.execute(text_request)) == runtime.execute(text_request)


def test_a_server_tool_call_is_numbered_and_its_metadata_kept(
    text_request: ExecutionRequest,
) -> None:
    def handler(request: ExecutionRequest, emit: Emitter) -> None:
        emit.server_tool_call("code_execution", {"code": "1+1"})
        emit.server_tool_call("web_fetch", provider_metadata={"anthropic": {"type": "x"}})
        emit.server_tool_result("srv_1", error="max_uses_exceeded")
        emit.citation(CitationSource(type="document", document_index=0), cited_text="two")
        emit.text("2")

    receipt = FunctionRuntime(handler).execute(text_request)
    assert receipt.server_tools == [
        ServerToolCall(call_id="srv_0", name="code_execution", input={"code": "1+1"}),
        ServerToolCall(
            call_id="srv_1", name="web_fetch", provider_metadata={"anthropic": {"type": "x"}}
        ),
        ServerToolResult(call_id="srv_1", name="web_fetch", error="max_uses_exceeded"),
    ]
    assert receipt.citations == [
        Citation(source=CitationSource(type="document", document_index=0), cited_text="two")
    ]


@pytest.mark.parametrize(
    ("say", "said"),
    [
        (lambda emit: emit.server_tool_result("srv_9", 1), "never announced"),
        (
            lambda emit: (emit.server_tool_call("w"), emit.server_tool_call("w", call_id="srv_0")),
            "announced twice",
        ),
        (lambda emit: emit.server_tool_call(""), "name"),
        (lambda emit: emit.citation("https://a.io", start=3, end=1), "before its start"),
        (lambda emit: emit.citation(CitationSource(type="url"), title="t"), "title"),
        (lambda emit: emit.file("", b"x"), "media_type"),
    ],
)
def test_a_handler_that_breaks_the_rules_is_told(
    say: Any, said: str, text_request: ExecutionRequest
) -> None:
    def handler(request: ExecutionRequest, emit: Emitter) -> None:
        say(emit)

    with pytest.raises(TurnUsageError, match=said):
        FunctionRuntime(handler).execute(text_request)


def test_a_handler_file_that_is_not_its_media_type_fails_coded(
    text_request: ExecutionRequest,
) -> None:
    events: list[StreamEvent] = []
    runtime = FunctionRuntime(lambda request, emit: emit.file("image/png", base64.b64decode(JPEG)))
    with pytest.raises(PortError) as raised:
        runtime.execute_streaming(text_request, events.append)
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert [event.kind for event in events] == ["Failed"]
