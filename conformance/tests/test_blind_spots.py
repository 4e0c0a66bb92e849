"""The suite's blind spots, closed (issue 42, item 6), each pinned without a server: what the
upstream finds wrong in a request, per protocol, naming the field; and how law 9 judges a
stream that ends with only its finish reason or only ``[DONE]`` — by what every client,
an SDK that never sees ``[DONE]`` included, can see."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from runport.conformance._cases import CASES_BY_NAME, ENDINGS, Case
from runport.conformance._law_tests import _judge_ending
from runport.conformance._observe import Outcome
from runport.conformance._protocols import resolve
from runport.conformance._wire_protocol import WireRequest
from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    Failed,
)
from runport.core import build_receipt
from runport.ports import PortError

TOOL_CASE = CASES_BY_NAME["one_tool_call"]
STRUCTURED = CASES_BY_NAME["structured_json"]
ENDING = {case.name: case for case in ENDINGS}
WEATHER = TOOL_CASE.request().interaction.tools


def _wire(body: Any) -> WireRequest:
    data = json.dumps(body).encode()
    return WireRequest("POST", "/", {}, {}, data, body)


def _tools(key: str) -> list[dict[str, Any]]:
    assert WEATHER is not None
    return [{"name": tool.name, key: tool.parameters} for tool in WEATHER]


CHAT_HISTORY = [
    {"role": "system", "content": "You are tested by runport-conformance."},
    {"role": "user", "content": "Play the scripted case 'one_tool_call'."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_h0",
                "type": "function",
                "function": {"name": "get_time", "arguments": '{"zone": "UTC"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_h0", "content": '{"time": "12:00"}'},
    {"role": "user", "content": "And the weather?"},
]

ZONE = {"zone": "UTC"}
RESULT = '{"time": "12:00"}'
USE = {"type": "tool_use", "id": "call_h0", "name": "get_time", "input": ZONE}
GEMINI_CALL = {"functionCall": {"name": "get_time", "args": ZONE}}
GEMINI_RESULT = {"functionResponse": {"name": "get_time", "response": {"time": "12:00"}}}
BEDROCK_USE = {"toolUse": {"toolUseId": "call_h0", "name": "get_time", "input": ZONE}}
BEDROCK_RESULT = {"toolResult": {"toolUseId": "call_h0", "content": [{"text": RESULT}]}}

GOOD: dict[str, dict[str, Any]] = {
    "openai-chat": {
        "messages": CHAT_HISTORY,
        "tools": [{"type": "function", "function": tool} for tool in _tools("parameters")],
    },
    "anthropic-messages": {
        "messages": [
            {"role": "user", "content": "Play the scripted case 'one_tool_call'."},
            {"role": "assistant", "content": [USE]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_h0", "content": RESULT},
                    {"type": "text", "text": "And the weather?"},
                ],
            },
        ],
        "tools": _tools("input_schema"),
    },
    "gemini": {
        "contents": [
            {"role": "user", "parts": [{"text": "Play the scripted case 'one_tool_call'."}]},
            {"role": "model", "parts": [GEMINI_CALL]},
            {"role": "user", "parts": [GEMINI_RESULT, {"text": "And the weather?"}]},
        ],
        "tools": [{"functionDeclarations": _tools("parametersJsonSchema")}],
    },
    "openai-responses": {
        "input": [
            {"type": "message", "role": "user", "content": "Play the scripted case."},
            {"type": "function_call", "call_id": "call_h0", "name": "get_time", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_h0", "output": RESULT},
        ],
        "tools": [{"type": "function", **tool} for tool in _tools("parameters")],
    },
    "bedrock-converse": {
        "messages": [
            {"role": "assistant", "content": [BEDROCK_USE]},
            {"role": "user", "content": [BEDROCK_RESULT]},
        ],
        "toolConfig": {
            "tools": [
                {"toolSpec": {"name": tool["name"], "inputSchema": {"json": tool["schema"]}}}
                for tool in _tools("schema")
            ]
        },
    },
}
GOOD["openai-responses"]["input"][1]["arguments"] = json.dumps(ZONE)


def _problems(protocol: str, body: Any, case: Case = TOOL_CASE) -> list[str]:
    wire = resolve(protocol)
    assert wire is not None
    return wire.request_problems(_wire(body), case.request())


@pytest.mark.parametrize("protocol", sorted(GOOD))
def test_a_request_carrying_the_tools_and_the_history_passes(protocol: str) -> None:
    assert _problems(protocol, GOOD[protocol]) == []


@pytest.mark.parametrize("protocol", sorted(GOOD))
def test_a_request_without_the_tools_is_named(protocol: str) -> None:
    body = copy.deepcopy(GOOD[protocol])
    body.pop("toolConfig" if protocol == "bedrock-converse" else "tools")
    problems = _problems(protocol, body)
    assert problems
    assert "get_weather" in problems[0]


@pytest.mark.parametrize(
    ("protocol", "drop", "says"),
    [
        ("openai-chat", ("messages", 3), "messages has roles"),
        ("anthropic-messages", ("messages", 2), "0 tool result(s) were sent back"),
        ("gemini", ("contents", 2), "0 tool result(s) were sent back"),
        ("openai-responses", ("input", 2), "0 tool result(s) were sent back"),
        ("bedrock-converse", ("messages", 1), "0 tool result(s) were sent back"),
    ],
)
def test_a_history_without_the_tool_result_is_named(
    protocol: str, drop: tuple[str, int], says: str
) -> None:
    body = copy.deepcopy(GOOD[protocol])
    del body[drop[0]][drop[1]]
    assert any(says in problem for problem in _problems(protocol, body))


def test_a_call_sent_back_with_another_id_names_the_field() -> None:
    body = copy.deepcopy(GOOD["openai-chat"])
    body["messages"][2]["tool_calls"][0]["id"] = "call_other"
    assert _problems("openai-chat", body) == [
        "messages[2].tool_calls[0].id is 'call_other', the call's id 'call_h0'"
    ]


def test_a_structured_contract_needs_its_schema_asked_for() -> None:
    messages = [
        {"role": "system", "content": "You are tested by runport-conformance."},
        {"role": "user", "content": "Play the scripted case 'structured_json'."},
    ]
    schema = STRUCTURED.request().interaction.output_schema
    asked = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
    assert (
        _problems("openai-chat", {"messages": messages, "response_format": asked}, STRUCTURED) == []
    )
    missing = _problems("openai-chat", {"messages": messages}, STRUCTURED)
    assert missing[0].startswith("response_format is missing")
    other = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}
    wrong = _problems("openai-chat", {"messages": messages, "response_format": other}, STRUCTURED)
    assert wrong[0].startswith("response_format.json_schema.schema is")
    gemini = {"contents": [], "generationConfig": {"responseJsonSchema": {"type": "object"}}}
    assert _problems("gemini", gemini, STRUCTURED)[0].startswith(
        "generationConfig.responseJsonSchema is"
    )
    assert "no structured output" in _problems("openai-responses", {"input": []}, STRUCTURED)[0]


# -- law 9: a finish reason without [DONE], and [DONE] without a finish reason ------------


def _receipt(case: Case, finish_reason: str | None) -> ExecutionReceipt:
    return build_receipt(
        case.request(),
        adapter=AdapterDescriptor(id="sdk", version="1", capabilities=["streaming", "text"]),
        text=case.answer(),
        finish_reason=finish_reason,
    )


def _completed(case: Case, finish_reason: str | None) -> Outcome:
    receipt = _receipt(case, finish_reason)
    events = [*case.progress(), Complete(receipt=receipt)]
    return Outcome(events=list(events), receipt=receipt)


def _truncated(case: Case) -> Outcome:
    error = PortError(ErrorCode.RUNTIME_STREAM_TRUNCATED, "the answer ended early")
    events = [*case.progress(), Failed(code=error.code, message=error.message)]
    return Outcome(events=list(events), error=error)


def _verdict(case: Case, outcome: Outcome) -> str | None:
    try:
        _judge_ending(case, outcome, list(case.progress()))
    except pytest.fail.Exception as failure:
        return str(failure)
    return None


def test_a_finish_reason_then_a_clean_end_is_a_whole_answer() -> None:
    case = ENDING["finish_without_marker"]
    assert _verdict(case, _completed(case, "stop")) is None
    said = _verdict(case, _truncated(case))
    assert said is not None
    assert "without [DONE]" in said


def test_done_without_a_finish_reason_is_whole_or_truncated_to_a_client_that_cannot_see_it() -> (
    None
):
    """An SDK swallows ``[DONE]``: what it can see is no finish reason, and it reports
    truncation, which the suite accepts; a client that sees ``[DONE]`` completes without a
    finish reason; neither may invent one, nor fail another way."""
    case = ENDING["marker_without_finish"]
    assert _verdict(case, _truncated(case)) is None
    assert _verdict(case, _completed(case, None)) is None
    invented = _verdict(case, _completed(case, "stop"))
    assert invented is not None
    assert "an adapter does not invent one" in invented
    other = PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "no finish reason")
    failed = Outcome(events=[*case.progress()], error=other)
    assert "should complete (with no finish_reason)" in str(_verdict(case, failed))


def test_the_endings_play_only_where_the_finish_reason_and_the_marker_are_apart() -> None:
    chat = resolve("openai-chat")
    assert chat is not None
    for protocol in ("scenario", "anthropic-messages", "gemini", "openai-responses"):
        wire = resolve(protocol)
        assert wire is not None
        assert "separate_marker" not in wire.features
    from runport.conformance._wire_protocol import WireContext

    context = WireContext(model="m", marker="x")
    finish_only = chat.stream(chat.played(ENDING["finish_without_marker"]), context)
    marker_only = chat.stream(chat.played(ENDING["marker_without_finish"]), context)
    assert b"[DONE]" not in b"".join(finish_only.closing)
    assert b'"finish_reason":"stop"' in b"".join(finish_only.closing)
    assert b"".join(marker_only.closing) == b"data: [DONE]\n\n"
    assert not any(b'"finish_reason":"' in frame.data for frame in marker_only.steps)


def test_a_delta_lost_before_the_end_is_named() -> None:
    case = ENDING["finish_without_marker"]
    outcome = _completed(case, "stop")
    outcome.events = [Delta(text="All "), *outcome.events[2:]]
    said = _verdict(case, outcome)
    assert said is not None
    assert "progress events differ" in said
