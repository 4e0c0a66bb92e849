"""A turn holding two tool calls under one id ends the run, coded, before any tool runs —
whichever adapter made the turn (adr/0044-stream-order-and-call-ids.md): a third party's
adapter, and the OpenAI chat adapter against a loopback server on 127.0.0.1. The mock's
scenario format refuses such a turn when the scenario is read, so no mock run gets that far."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from runport.application import RunError, Tool, run, run_stream
from runport.contracts import (
    AdapterDescriptor,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    ToolCall,
)
from runport.core import ScenarioError, build_receipt, parse_scenario
from runport.mock import ScriptedRuntime
from runport.ports import RuntimeAdapter

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"
ANSWER = '{"city": "Delft", "celsius": 12.5}'


class CountedWeather:
    """``get_weather``, counting how often it ran."""

    def __init__(self) -> None:
        self.runs = 0

    def tool(self) -> Tool:
        def get_weather(city: str) -> dict[str, Any]:
            """Current temperature for a city."""
            self.runs += 1
            return {"city": city, "celsius": 12.5}

        return Tool.from_function(get_weather)


def _scripted(ids: tuple[str, str]) -> ScriptedRuntime:
    calls = [
        {
            "kind": "tool_call_delta",
            "index": index,
            "call_id": call_id,
            "name": "get_weather",
            "arguments_fragment": json.dumps({"city": city}),
        }
        for index, (call_id, city) in enumerate(zip(ids, ("Delft", "Oslo"), strict=True))
    ]
    answer = [{"kind": "delta", "text": ANSWER}, {"kind": "finish", "finish_reason": "stop"}]
    scenario = parse_scenario(
        {
            "api_version": "runport.mock/v1",
            "id": "duplicate-ids",
            "turns": [
                {"events": [*calls, {"kind": "finish", "finish_reason": "tool_calls"}]},
                {"events": answer},
            ],
        }
    )
    return ScriptedRuntime(scenario)


def _run(adapter: RuntimeAdapter, tool: Tool, *, streamed: bool) -> Any:
    if streamed:
        events: list[StreamEvent] = []
        return run_stream(
            CONTRACT, adapter, inputs={"city": "Delft"}, tools=[tool], on_event=events.append
        )
    return run(CONTRACT, adapter, inputs={"city": "Delft"}, tools=[tool])


def test_the_mock_refuses_a_scenario_with_two_calls_under_one_id_before_any_run() -> None:
    weather = CountedWeather()
    with pytest.raises(ScenarioError) as raised:
        _run(_scripted(("c1", "c1")), weather.tool(), streamed=False)
    assert raised.value.code == ErrorCode.DATA_INVALID
    assert "'c1' is already the id of tool call 0" in raised.value.message
    assert weather.runs == 0


class DuplicatingAdapter(RuntimeAdapter):
    """A third party's adapter whose first turn holds two calls under one id (the run, not
    the adapter, must refuse it); later turns answer."""

    def __init__(self) -> None:
        self.turns = 0

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id="duplicating", version="1", capabilities=["structured_output", "tool_calls"]
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        self.turns += 1
        if self.turns > 1:
            return build_receipt(request, adapter=self.descriptor(), text=ANSWER)
        calls = [
            ToolCall(call_id="c1", name="get_weather", arguments={"city": city})
            for city in ("Delft", "Oslo")
        ]
        return build_receipt(
            request,
            adapter=self.descriptor(),
            text="",
            tool_calls=calls,
            finish_reason="tool_calls",
        )


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_stream"])
def test_two_calls_under_one_id_from_any_adapter_run_no_tool(streamed: bool) -> None:
    weather = CountedWeather()
    adapter = DuplicatingAdapter()
    with pytest.raises(RunError) as raised:
        _run(adapter, weather.tool(), streamed=streamed)
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "'c1'" in raised.value.message
    assert weather.runs == 0
    assert adapter.turns == 1
    (receipt,) = raised.value.partial.receipts  # the turn is kept as evidence
    assert [call.call_id for call in receipt.tool_calls or ()] == ["c1", "c1"]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_stream"])
def test_distinct_ids_still_run_every_call(streamed: bool) -> None:
    weather = CountedWeather()
    result = _run(_scripted(("c1", "c2")), weather.tool(), streamed=streamed)
    assert weather.runs == 2
    assert result.output == json.loads(ANSWER)


class ChatUpstream:
    """A loopback chat-completions server: turn 1 makes two calls under one id (streamed or
    whole, as asked), any later turn answers."""

    def __init__(self) -> None:
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests += 1
                kind, data = owner.answer(bool(body.get("stream")))
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, stream: bool) -> tuple[str, bytes]:
        calls = [
            {
                "id": "call_same",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
            }
            for city in ("Delft", "Oslo")
        ]
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": calls}
        finish = "tool_calls"
        if self.requests > 1:
            message, finish = {"role": "assistant", "content": ANSWER}, "stop"
        if not stream:
            whole = {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}
            return "application/json", json.dumps(whole).encode()
        delta: dict[str, Any] = {"content": message["content"]}
        if "tool_calls" in message:
            delta["tool_calls"] = [{"index": n, **c} for n, c in enumerate(message["tool_calls"])]
        chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}]
        frames = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
        return "text/event-stream", "".join(frames).encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def chat() -> Iterator[ChatUpstream]:
    server = ChatUpstream()
    yield server
    server.close()


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_stream"])
def test_two_openai_chat_calls_under_one_id_run_no_tool(chat: ChatUpstream, streamed: bool) -> None:
    openai = pytest.importorskip("runport.openai")
    weather = CountedWeather()
    adapter = openai.OpenAIChatAdapter(base_url=chat.base_url, model="test-model", api_key="k")
    with adapter, pytest.raises(RunError) as raised:
        _run(adapter, weather.tool(), streamed=streamed)
    assert raised.value.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "'call_same'" in raised.value.message
    assert weather.runs == 0
    assert chat.requests == 1  # the run ended at the turn: nothing was sent back
