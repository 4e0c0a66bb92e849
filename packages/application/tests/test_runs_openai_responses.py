"""A tool run on OpenAI's Responses API, stateless, against a loopback Responses server on
127.0.0.1 that keeps nothing: turn 1 reasons (its reasoning encrypted) and calls a tool; turn
2's request carries the whole conversation — the ``reasoning`` item with its id and
``encrypted_content``, the ``function_call`` and the ``function_call_output`` — and the server
refuses it otherwise, as the API does (adr/0032)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("runport.openai")

from runport.application import arun, run, run_stream  # noqa: E402

CONTRACT = (Path(__file__).parent / "data" / "weather.yaml").read_text(encoding="utf-8")
ENCRYPTED = "gAAAAABrunport-encrypted-reasoning-for-the-run"
REASONING = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "I need the weather."}],
    "encrypted_content": ENCRYPTED,
}
CALL = {
    "id": "fc_1",
    "type": "function_call",
    "status": "completed",
    "call_id": "call_w1",
    "name": "get_weather",
    "arguments": '{"city": "Delft"}',
}
ANSWER = '{"city": "Delft", "celsius": 12.5}'
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
}


def _events(output: list[dict[str, Any]]) -> bytes:
    """A turn as the API streams it: each item added then done (its deltas left to the
    finished items, which the adapter reads whole), then ``response.completed``."""
    events: list[dict[str, Any]] = []
    for position, item in enumerate(output):
        added = {**item, "summary": []} if item["type"] == "reasoning" else item
        if item["type"] == "message":
            added = {**item, "content": []}
        if item["type"] == "function_call":
            added = {**item, "arguments": ""}
        events.append(
            {"type": "response.output_item.added", "output_index": position, "item": added}
        )
        events.append({"type": "response.output_item.done", "output_index": position, "item": item})
    usage = {
        "input_tokens": 20,
        "output_tokens": 9,
        "output_tokens_details": {"reasoning_tokens": 4},
    }
    response = {"id": "resp_1", "object": "response", "status": "completed", "output": output}
    events.append({"type": "response.completed", "response": {**response, "usage": usage}})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


class StatelessUpstream:
    """A loopback Responses server that keeps nothing between requests (as ``store: false``
    asks): turn 1 reasons and calls ``get_weather``; any later request is answered only if it
    carries turn 1's reasoning back — id and encrypted content intact — and the call's result,
    else with the API's own 404 for an item it cannot find."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                status, data = owner.answer(body)
                self.send_response(status)
                self.send_header(
                    "Content-Type", "text/event-stream" if status == 200 else "application/json"
                )
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> tuple[int, bytes]:
        if len(self.bodies) == 1:
            return 200, _events([REASONING, CALL])
        reasoning = [item for item in body["input"] if item.get("type") == "reasoning"]
        if [item.get("encrypted_content") for item in reasoning] != [ENCRYPTED]:
            message = (
                "Item with id 'rs_1' not found. Items are not persisted when `store` is set to "
                "false."
            )
            return 404, json.dumps(
                {"error": {"message": message, "type": "invalid_request_error"}}
            ).encode()
        return 200, _events([MESSAGE])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream() -> Iterator[StatelessUpstream]:
    server = StatelessUpstream()
    yield server
    server.close()


def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    return {"city": city, "celsius": 12.5}


@pytest.fixture
def contract(tmp_path: Path) -> Path:
    path = tmp_path / "weather.yaml"
    path.write_text(CONTRACT + "runtime_policy:\n  reasoning: { effort: low }\n", encoding="utf-8")
    return path


SENT_BACK = [
    {"type": "message", "role": "user", "content": "Weather in Delft"},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "I need the weather."}],
        "encrypted_content": ENCRYPTED,
    },
    {
        "type": "function_call",
        "call_id": "call_w1",
        "name": "get_weather",
        "arguments": '{"city":"Delft"}',
    },
    {
        "type": "function_call_output",
        "call_id": "call_w1",
        "output": '{"celsius":12.5,"city":"Delft"}',
    },
]


def _check(upstream: StatelessUpstream, result: Any) -> None:
    first, second = upstream.bodies
    for body in (first, second):
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        assert body["reasoning"] == {"effort": "low", "summary": "auto"}
        assert body["instructions"] == "Use the tools, then answer with JSON."
    assert first["input"] == SENT_BACK[:1]
    assert second["input"] == SENT_BACK
    assert result.output == {"city": "Delft", "celsius": 12.5}
    assert result.receipts[0].reasoning[0].provider_metadata == {
        "openai-responses": {"id": "rs_1", "encrypted_content": ENCRYPTED}
    }


@pytest.mark.parametrize("streamed", [True, False], ids=["run_stream", "run"])
def test_a_tool_run_round_trips_its_encrypted_reasoning_statelessly(
    upstream: StatelessUpstream, contract: Path, streamed: bool
) -> None:
    adapter = openai.OpenAIResponsesAdapter(base_url=upstream.base_url, model="gpt-5", api_key="k")
    with adapter:
        if streamed:
            result = run_stream(
                contract, adapter, on_event=lambda _: None, inputs={"city": "Delft"},
                tools=[get_weather],
            )  # fmt: skip
        else:
            result = run(contract, adapter, inputs={"city": "Delft"}, tools=[get_weather])
    _check(upstream, result)


def test_the_async_run_round_trips_too(upstream: StatelessUpstream, contract: Path) -> None:
    import asyncio

    async def main() -> Any:
        adapter = openai.AsyncOpenAIResponsesAdapter(
            base_url=upstream.base_url, model="gpt-5", api_key="k"
        )
        async with adapter:
            return await arun(contract, adapter, inputs={"city": "Delft"}, tools=[get_weather])

    _check(upstream, asyncio.run(main()))
