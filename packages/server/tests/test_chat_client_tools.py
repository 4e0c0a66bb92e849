"""Client tools over the AI SDK's chat route (adr/0069): a call of a tool the page runs itself
(``Tool.client``, an AI SDK tool without ``execute``) ends the stream paused, its input
available and no output, with the sealed continuation; the next request, its last message
the assistant's with the tool part ``output-available`` (``addToolOutput``), resumes the run.
Each refusal is coded and runs nothing; nothing runs twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runport.application import Tool
from runport.contracts import ExecutionRequest
from runport.mock import AsyncEmitter, AsyncFunctionRuntime
from runport.server import create_app, serve_in_background

from .conftest import catalog
from .test_chat import CHAT, KEY, chat_body, chunks, user
from .test_chat_approvals import AGUI, agui_events, paused_message, refusal

DELETED: list[str] = []


def delete_file(path: str) -> str:
    """Delete a file."""
    DELETED.append(path)
    return f"deleted {path}"


LOCATE = Tool.client(
    "locate",
    "Where the user is (the browser asks).",
    {"type": "object", "properties": {"precise": {"type": "boolean"}}, "required": ["precise"]},
)
TOOLS = [LOCATE, Tool.from_function(delete_file, needs_approval=True)]
CALLS = {
    "here": [("locate", "loc-1", {"precise": True})],
    "two": [("locate", "loc-1", {"precise": True}), ("locate", "loc-2", {"precise": False})],
    "mixed": [("locate", "loc-1", {"precise": True}), ("delete_file", "del-1", {"path": "x"})],
}


class Model:
    """Makes the calls ``CALLS`` names for the user's word, then answers with what every tool
    message said; keeps every request it was sent."""

    def __init__(self) -> None:
        self.requests: list[ExecutionRequest] = []

    async def handler(self, request: ExecutionRequest, emit: AsyncEmitter) -> None:
        self.requests.append(request)
        messages = request.interaction.messages
        if messages[-1].role == "user":
            word = str(messages[-1].content).removeprefix("Which coat for ")
            for name, call_id, arguments in CALLS[word]:
                await emit.tool_call(name, arguments, call_id=call_id)
            await emit.finish("tool_calls")
            return
        told = " | ".join(str(m.content) for m in messages if m.role == "tool")
        await emit.text(json.dumps({"coat": told}))
        await emit.finish("stop")


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[httpx.Client, Model]]:
    model = Model()
    app = create_app(
        catalog(), lambda: AsyncFunctionRuntime(model.handler), tools=TOOLS, reasoning_key=KEY
    )
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http, model


@pytest.fixture(autouse=True)
def nothing_deleted_yet() -> None:
    DELETED.clear()


def pause(http: httpx.Client, word: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    response = http.post(CHAT, json=chat_body(user(word)))
    assert response.status_code == 200, response.text
    sent = chunks(response.text)
    return sent, paused_message(sent)


def ran(message: dict[str, Any], **outputs: Any) -> dict[str, Any]:
    """``message`` with its client calls answered as ``addToolOutput`` does: the tool part
    ``output-available`` with the output (``loc_1=`` answers ``loc-1``)."""
    parts = []
    for part in message["parts"]:
        key = part.get("toolCallId", "").replace("-", "_")
        if key in outputs:
            part = {**part, "state": "output-available", "output": outputs[key]}
        parts.append(part)
    return {**message, "parts": parts}


def approve(message: dict[str, Any], call_id: str) -> dict[str, Any]:
    parts = [
        {**p, "state": "approval-responded", "approval": {**p["approval"], "approved": True}}
        if p.get("toolCallId") == call_id
        else p
        for p in message["parts"]
    ]
    return {**message, "parts": parts}


def test_a_client_call_ends_the_stream_with_its_input_and_no_output(
    served: tuple[httpx.Client, Model],
) -> None:
    http, _ = served
    sent, _ = pause(http, "here")
    (call,) = [chunk for chunk in sent if chunk["type"] == "tool-input-available"]
    assert call["toolCallId"] == "loc-1"
    assert call["toolName"] == "locate"
    assert call["input"] == {"precise": True}
    kinds = [chunk["type"] for chunk in sent]
    assert "tool-output-available" not in kinds
    assert "tool-approval-request" not in kinds  # the page runs it: no one is asked
    (sealed,) = [chunk for chunk in sent if chunk["type"] == "data-runport-continuation"]
    assert sealed["data"].startswith("rp1.")
    assert kinds[-1] == "finish"


def test_the_clients_output_resumes_the_run_once(served: tuple[httpx.Client, Model]) -> None:
    http, model = served
    _, message = pause(http, "here")
    model.requests.clear()
    body = {**chat_body(user("here"), ran(message, loc_1={"city": "Oslo"})), "messageId": "a1"}
    response = http.post(CHAT, json=body)
    assert response.status_code == 200, response.text
    sent = chunks(response.text)
    assert sent[0] == {"type": "start", "messageId": "a1"}  # the paused message goes on
    assert sent[1] == {
        "type": "tool-output-available",
        "toolCallId": "loc-1",
        "output": {"city": "Oslo"},
    }
    (request,) = model.requests  # asked once more, the client's result in the conversation
    assert [m.role for m in request.interaction.messages] == ["user", "assistant", "tool"]
    text = "".join(chunk["delta"] for chunk in sent if chunk["type"] == "text-delta")
    assert json.loads(text) == {"coat": '{"city":"Oslo"}'}
    assert refusal(http.post(CHAT, json=body)) == (400, "TQX_CONTINUATION_INVALID")


def test_a_client_result_and_an_approval_resume_one_pause(
    served: tuple[httpx.Client, Model],
) -> None:
    http, _ = served
    sent, message = pause(http, "mixed")
    assert [c["toolCallId"] for c in sent if c["type"] == "tool-approval-request"] == ["del-1"]
    answer = approve(ran(message, loc_1="at home"), "del-1")
    response = http.post(CHAT, json=chat_body(user("mixed"), answer))
    assert response.status_code == 200, response.text
    text = "".join(c["delta"] for c in chunks(response.text) if c["type"] == "text-delta")
    assert json.loads(text) == {"coat": "at home | deleted x"}
    assert DELETED == ["x"]


def test_a_client_tool_that_failed_resumes_the_run_with_its_error(
    served: tuple[httpx.Client, Model],
) -> None:
    """``addToolOutput({state: "output-error", errorText})``: the model is told the error,
    and the stream shows the call failed, not answered."""
    http, model = served
    _, message = pause(http, "here")
    failed = {
        **message,
        "parts": [
            {**part, "state": "output-error", "errorText": "location denied"}
            if part.get("toolCallId") == "loc-1"
            else part
            for part in message["parts"]
        ],
    }
    model.requests.clear()
    response = http.post(CHAT, json=chat_body(user("here"), failed))
    assert response.status_code == 200, response.text
    sent = chunks(response.text)
    assert sent[1] == {
        "type": "tool-output-error",
        "toolCallId": "loc-1",
        "errorText": "location denied",
    }
    (request,) = model.requests
    assert request.interaction.messages[-1].content == "location denied"
    text = "".join(chunk["delta"] for chunk in sent if chunk["type"] == "text-delta")
    assert json.loads(text) == {"coat": "location denied"}


BAD = [
    ("a result for a call never made", "here", {"loc_1": 1, "zz": 2}, None),
    ("a result for a call waiting for approval", "mixed", {"loc_1": 1, "del_1": 2}, None),
    ("a missing result", "two", {"loc_1": 1}, None),
    ("an approval and no result", "mixed", {}, "del-1"),
]


@pytest.mark.parametrize(("case", "word", "outputs", "approved"), BAD, ids=[b[0] for b in BAD])
def test_bad_client_results_are_refused_coded_and_run_nothing(
    served: tuple[httpx.Client, Model],
    case: str,
    word: str,
    outputs: dict[str, Any],
    approved: str | None,
) -> None:
    http, model = served
    _, message = pause(http, word)
    answer = ran(message, **outputs)
    if "zz" in outputs:  # a tool part for a call the model never made
        part = {"type": "tool-locate", "toolCallId": "zz", "state": "output-available"}
        answer["parts"].append({**part, "input": {"precise": True}, "output": 2})
    if approved is not None:
        answer = approve(answer, approved)
    model.requests.clear()
    response = http.post(CHAT, json=chat_body(user(word), answer))
    assert refusal(response) == (400, "TQX_APPROVALS_INVALID"), case
    assert model.requests == []
    assert DELETED == []
    every = {call_id.replace("-", "_"): "ok" for _, call_id, _ in CALLS[word] if "loc" in call_id}
    fixed = ran(message, **every)  # a refusal spends nothing: the right answer resumes it
    if word == "mixed":
        fixed = approve(fixed, "del-1")
    assert http.post(CHAT, json=chat_body(user(word), fixed)).status_code == 200
    assert len(DELETED) == (word == "mixed")  # the approved call ran once, after the fix


# AG-UI: the client offers its tools in RunAgentInput.tools; a run paused at a call of one
# ends with the continuation in a STATE_SNAPSHOT and RUN_FINISHED's pendingToolCallIds, and
# the next RunAgentInput (the state sent back, the results as tool messages) resumes it.

OFFERED = [
    {
        "name": "locate",
        "description": "Where the user is.",
        "parameters": {"type": "object", "properties": {"precise": {"type": "boolean"}}},
    }
]
AGUI_USER = {"id": "u1", "role": "user", "content": "here"}


@pytest.fixture(scope="module")
def agui_served() -> Iterator[tuple[httpx.Client, Model]]:
    model = Model()
    tools = [Tool.from_function(delete_file, needs_approval=True)]
    app = create_app(
        catalog(), lambda: AsyncFunctionRuntime(model.handler), tools=tools, reasoning_key=KEY
    )
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http, model


def agui_pause(http: httpx.Client) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    body = {"threadId": "t1", "runId": "r1", "messages": [AGUI_USER], "tools": OFFERED}
    sent = agui_events(http.post(AGUI, json=body).text)
    (state,) = [e["snapshot"] for e in sent if e["type"] == "STATE_SNAPSHOT"]
    return sent, state


def agui_answer(state: dict[str, Any], *results: tuple[str, str]) -> dict[str, Any]:
    """The next RunAgentInput as ``HttpAgent`` sends it once the page's tool ran: the state
    as the run left it, the assistant's call, and a tool message per result."""
    call = {
        "id": "loc-1",
        "type": "function",
        "function": {"name": "locate", "arguments": '{"precise": true}'},
    }
    assistant = {"id": "a1", "role": "assistant", "toolCalls": [call]}
    answers = [
        {"id": f"t{n}", "role": "tool", "toolCallId": call_id, "content": content}
        for n, (call_id, content) in enumerate(results)
    ]
    messages = [AGUI_USER, assistant, *answers]
    return {"threadId": "t1", "runId": "r2", "messages": messages, "tools": OFFERED, "state": state}


def test_ag_ui_runs_the_client_s_offered_tool_on_the_client_and_resumes_with_its_message(
    agui_served: tuple[httpx.Client, Model],
) -> None:
    http, model = agui_served
    sent, state = agui_pause(http)
    assert [e["toolCallId"] for e in sent if e["type"] == "TOOL_CALL_START"] == ["loc-1"]
    assert not [e for e in sent if e["type"] == "TOOL_CALL_RESULT"]
    assert state["runport"]["continuation"].startswith("rp1.")
    assert sent[-1]["type"] == "RUN_FINISHED"
    assert sent[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["loc-1"]}
    model.requests.clear()
    body = agui_answer(state, ("loc-1", "in Oslo"))
    resumed = agui_events(http.post(AGUI, json=body).text)
    assert resumed[-1]["type"] == "RUN_FINISHED"
    assert resumed[-1]["result"] == {"coat": "in Oslo"}
    (request,) = model.requests
    assert request.interaction.messages[-1].content == "in Oslo"
    assert "locate" in [tool.name for tool in request.interaction.tools or []]
    assert refusal(http.post(AGUI, json=body)) == (400, "TQX_CONTINUATION_INVALID")


def test_ag_ui_a_tool_message_with_an_error_tells_the_model_the_error(
    agui_served: tuple[httpx.Client, Model],
) -> None:
    http, model = agui_served
    _, state = agui_pause(http)
    body = agui_answer(state, ("loc-1", ""))
    body["messages"][-1]["error"] = "location denied"
    model.requests.clear()
    resumed = agui_events(http.post(AGUI, json=body).text)
    assert resumed[-1]["type"] == "RUN_FINISHED"
    assert resumed[-1]["result"] == {"coat": "location denied"}
    (request,) = model.requests
    assert request.interaction.messages[-1].content == "location denied"


AGUI_BAD = [
    ("a result for a call never made", [("loc-1", "x"), ("zz", "y")], "TQX_APPROVALS_INVALID"),
    ("no result for the pending call", [("other", "x")], "TQX_APPROVALS_INVALID"),
]


@pytest.mark.parametrize(("case", "results", "code"), AGUI_BAD, ids=[b[0] for b in AGUI_BAD])
def test_ag_ui_refuses_bad_tool_messages_coded_and_runs_nothing(
    agui_served: tuple[httpx.Client, Model],
    case: str,
    results: list[tuple[str, str]],
    code: str,
) -> None:
    http, model = agui_served
    _, state = agui_pause(http)
    model.requests.clear()
    assert refusal(http.post(AGUI, json=agui_answer(state, *results))) == (400, code), case
    assert model.requests == []
    fixed = agui_events(http.post(AGUI, json=agui_answer(state, ("loc-1", "ok"))).text)
    assert fixed[-1]["type"] == "RUN_FINISHED"  # a refusal spent nothing


def test_ag_ui_refuses_a_client_tool_named_like_the_server_s() -> None:
    app = create_app(
        catalog(), lambda: AsyncFunctionRuntime(Model().handler), tools=TOOLS, reasoning_key=KEY
    )
    body = {"threadId": "t1", "runId": "r1", "messages": [AGUI_USER], "tools": OFFERED}
    with serve_in_background(app) as url:
        response = httpx.post(f"{url}{AGUI}", json=body, timeout=30)
    assert refusal(response) == (400, "TQX_DATA_INVALID")
