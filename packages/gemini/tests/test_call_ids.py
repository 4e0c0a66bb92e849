"""Function-call ids over loopback: an id Gemini gives a call goes back with the call and with
its result in the next turn (Gemini 3 and Vertex AI match results to calls by id), as Google's
SDK sends them; a call that came without one goes back without one, as before."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from google import genai
from google.genai import types

from runport.conformance.loopback import json_reply, seen, serving, stream_reply
from runport.conformance.providers import WEATHER, Provider, make_request, run_streamed
from runport.contracts import ExecutionReceipt, Message
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter

from .gemini_wire import Turn, call, response_body, stream_chunks, text

API_KEY = "AIzaSyTEST-call-ids-0123456789"
PROVIDER = Provider(GeminiAdapter, AsyncGeminiAdapter, "gemini-test", API_KEY)
QUESTION = [Message(role="user", content="Weather in Paris and Rome?")]
SUNNY = Turn([[text("Sunny.")]])


def _first_turn(turn: Turn, stream: bool) -> Any:
    return stream_reply(stream_chunks(turn)) if stream else json_reply(response_body(turn))


def _tool_turn_history(receipt: ExecutionReceipt) -> list[Message]:
    """The next turn's messages, as a run's tool loop builds them from the receipt."""
    assert receipt.tool_calls
    return [
        *QUESTION,
        Message(role="assistant", content=receipt.text or "", tool_calls=receipt.tool_calls),
        *(
            Message(role="tool", content=f"result {n}", tool_call_id=c.call_id)
            for n, c in enumerate(receipt.tool_calls)
        ),
    ]


def _second_request(client: httpx.Client, turn: Turn, stream: bool) -> dict[str, Any]:
    with serving(_first_turn(turn, stream), stream_reply(stream_chunks(SUNNY))) as server:
        adapter = PROVIDER.adapter_for(server, client)
        request = make_request(messages=QUESTION, tools=[WEATHER])
        receipt = run_streamed(adapter, request).receipt if stream else adapter.execute(request)
        assert receipt is not None
        history = _tool_turn_history(receipt)
        assert run_streamed(adapter, make_request(messages=history, tools=[WEATHER])).receipt
        body: dict[str, Any] = seen(server).body
    return body


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
def test_an_id_gemini_gave_goes_back_with_the_call_and_its_result(
    client: httpx.Client, stream: bool
) -> None:
    turn = Turn([[call("get_weather", {"city": "Paris"}, call_id="x7Kq2pRs")]])
    contents = _second_request(client, turn, stream)["contents"]
    assert contents[1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Paris"},
                        "id": "x7Kq2pRs",
                    }
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"result": "result 0"},
                        "id": "x7Kq2pRs",
                    }
                }
            ],
        },
    ]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
def test_calls_with_and_without_ids_each_go_back_as_they_came(
    client: httpx.Client, stream: bool
) -> None:
    """Two calls to one function, the second without an id: names alone could not tell their
    results apart, the first's id does; the second goes back as it came, bare."""
    turn = Turn(
        [
            [
                call("get_weather", {"city": "Paris"}, call_id="p-1"),
                call("get_weather", {"city": "Rome"}),
            ]
        ]
    )
    contents = _second_request(client, turn, stream)["contents"]
    calls = [part["functionCall"] for part in contents[1]["parts"]]
    results = [part["functionResponse"] for part in contents[2]["parts"]]
    assert [c.get("id") for c in calls] == ["p-1", None]
    assert [r.get("id") for r in results] == ["p-1", None]
    assert [r["response"] for r in results] == [{"result": "result 0"}, {"result": "result 1"}]
    assert "id" not in calls[1]
    assert "id" not in results[1]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
def test_a_call_without_an_id_goes_back_without_one(client: httpx.Client, stream: bool) -> None:
    turn = Turn([[call("get_weather", {"city": "Paris"})]])
    contents = _second_request(client, turn, stream)["contents"]
    assert contents[1]["parts"] == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    ]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"result": "result 0"}}}
    ]


def test_a_streamed_arguments_calls_id_goes_back(client: httpx.Client) -> None:
    """Gemini 3's streamed arguments: the id arrives with the first piece."""
    pieces = [
        {"functionCall": {"name": "get_weather", "id": "fc-3", "willContinue": True}},
        {"functionCall": {"partialArgs": [{"jsonPath": "$.city", "stringValue": "Oslo"}]}},
    ]
    contents = _second_request(client, Turn([[piece] for piece in pieces]), True)["contents"]
    assert contents[1]["parts"][0]["functionCall"]["id"] == "fc-3"
    assert contents[2]["parts"][0]["functionResponse"]["id"] == "fc-3"


def test_the_history_goes_as_googles_sdk_sends_it(client: httpx.Client) -> None:
    """The same history sent by runport and by ``google-genai``: the same ``contents``."""
    turn = Turn(
        [
            [
                call("get_weather", {"city": "Paris"}, call_id="g-1"),
                call("get_weather", {"city": "Rome"}),
            ]
        ]
    )
    with serving(stream_reply(stream_chunks(SUNNY))) as server:
        # The SDK, given the calls and results a tool loop would give it.
        sdk = genai.Client(
            api_key=API_KEY,
            http_options=types.HttpOptions(
                base_url=server.base_url.removesuffix("/v1"), api_version="v1beta"
            ),
        )
        try:
            list(
                sdk.models.generate_content_stream(
                    model="gemini-test",
                    contents=[
                        types.Content(role="user", parts=[types.Part(text=QUESTION[0].content)]),
                        types.Content(
                            role="model",
                            parts=[
                                types.Part(
                                    function_call=types.FunctionCall(
                                        id="g-1", name="get_weather", args={"city": "Paris"}
                                    )
                                ),
                                types.Part(
                                    function_call=types.FunctionCall(
                                        name="get_weather", args={"city": "Rome"}
                                    )
                                ),
                            ],
                        ),
                        types.Content(
                            role="user",
                            parts=[
                                types.Part(
                                    function_response=types.FunctionResponse(
                                        id="g-1",
                                        name="get_weather",
                                        response={"result": "result 0"},
                                    )
                                ),
                                types.Part(
                                    function_response=types.FunctionResponse(
                                        name="get_weather", response={"result": "result 1"}
                                    )
                                ),
                            ],
                        ),
                    ],
                )
            )
        finally:
            sdk.close()
        sdk_contents = seen(server).body["contents"]
    assert sdk_contents[1]["parts"][0]["functionCall"]["id"] == "g-1"  # the SDK sends it too
    assert _second_request(client, turn, True)["contents"] == sdk_contents
