"""A person in the loop over the AI SDK's chat route (adr/0069): a call of a tool that needs
approval ends the stream paused, with the request and the sealed continuation; the next
request, its last message the assistant's with the approvals answered, resumes the run on any
server with the key. Each refusal is coded and runs nothing; an approved call runs once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.application import Tool
from runport.contracts import ExecutionRequest
from runport.mock import AsyncEmitter, AsyncFunctionRuntime
from runport.server import MemoryEventLog, create_app, serve_in_background

from .conftest import catalog
from .test_chat import CHAT, KEY, chat_body, chunks, user

DELETED: list[str] = []


def delete_file(path: str) -> str:
    """Delete a file."""
    DELETED.append(path)
    return f"deleted {path}"


TOOLS = [Tool.from_function(delete_file, needs_approval=True)]


class Model:
    """Asks to delete the file the user names (twice when it is ``both``; ``n=K``: K files;
    ``twice``: one file, then after its answer another), then answers with what the last tool
    message said; keeps every request it was sent."""

    def __init__(self) -> None:
        self.requests: list[ExecutionRequest] = []

    async def handler(self, request: ExecutionRequest, emit: AsyncEmitter) -> None:
        self.requests.append(request)
        last = request.interaction.messages[-1]
        if last.role == "user":
            path = str(last.content).removeprefix("Which coat for ")
            if path.startswith("n="):  # n=K: K calls, each deleting a file of its own
                calls = [(f"del-{n}", f"file{n}") for n in range(1, int(path[2:]) + 1)]
            elif path == "twice":
                calls = [("del-1", "twice-a")]
            else:
                calls = [(f"del-{n}", path) for n in ((1, 2) if path == "both" else (1,))]
            for call_id, name in calls:
                await emit.tool_call("delete_file", {"path": name}, call_id=call_id)
            await emit.finish("tool_calls")
            return
        if last.content == "deleted twice-a":  # one more file, asked again
            await emit.tool_call("delete_file", {"path": "twice-b"}, call_id="del-2")
            await emit.finish("tool_calls")
            return
        await emit.text(json.dumps({"coat": last.content}))
        await emit.finish("stop")

    def adapter(self) -> AsyncFunctionRuntime:
        return AsyncFunctionRuntime(self.handler)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[httpx.Client, Model]]:
    model = Model()
    app = create_app(catalog(), model.adapter, tools=TOOLS, reasoning_key=KEY)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http, model


@pytest.fixture(autouse=True)
def nothing_deleted_yet() -> None:
    DELETED.clear()


def paused_message(sent: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant UIMessage the AI SDK keeps from a paused stream: its tool parts awaiting
    approval and the continuation part (what useChat sends back)."""
    parts: list[dict[str, Any]] = []
    tools: dict[str, dict[str, Any]] = {}
    for chunk in sent:
        kind = chunk["type"]
        if kind == "start-step":
            parts.append({"type": "step-start"})
        elif kind == "tool-input-available":
            part = {
                "type": f"tool-{chunk['toolName']}",
                "toolCallId": chunk["toolCallId"],
                "state": "input-available",
                "input": chunk["input"],
            }
            tools[chunk["toolCallId"]] = part
            parts.append(part)
        elif kind == "tool-approval-request":
            tools[chunk["toolCallId"]].update(
                state="approval-requested", approval={"id": chunk["approvalId"]}
            )
        elif kind.startswith("data-"):
            parts.append({"type": kind, "id": chunk["id"], "data": chunk["data"]})
    return {"id": "a1", "role": "assistant", "parts": parts}


def answered(message: dict[str, Any], **decisions: bool | str) -> dict[str, Any]:
    """``message`` with its approvals answered as ``addToolApprovalResponse`` does:
    ``True`` approves, ``False`` denies, a string denies with that reason."""
    parts = []
    for part in message["parts"]:
        decision = decisions.get(part.get("toolCallId", "").replace("-", "_"))
        if decision is not None:
            approval = {**part["approval"], "approved": decision is True}
            if isinstance(decision, str):
                approval["reason"] = decision
            part = {**part, "state": "approval-responded", "approval": approval}
        parts.append(part)
    return {**message, "parts": parts}


def pause(http: httpx.Client, path: str = "notes.txt") -> dict[str, Any]:
    response = http.post(CHAT, json=chat_body(user(path)))
    assert response.status_code == 200, response.text
    return paused_message(chunks(response.text))


def refusal(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def test_a_call_that_needs_approval_ends_the_stream_paused_and_nothing_runs(
    served: tuple[httpx.Client, Model],
) -> None:
    http, _ = served
    sent = chunks(http.post(CHAT, json=chat_body(user("notes.txt"))).text)
    requests = [chunk for chunk in sent if chunk["type"] == "tool-approval-request"]
    assert requests == [
        {"type": "tool-approval-request", "approvalId": "del-1", "toolCallId": "del-1"}
    ]
    (sealed,) = [chunk for chunk in sent if chunk["type"] == "data-runport-continuation"]
    assert sealed["id"] == "continuation"
    assert sealed["data"].startswith("rp1.")
    kinds = [chunk["type"] for chunk in sent]
    assert kinds[-1] == "finish"
    assert sent[-1]["finishReason"] == "tool-calls"
    assert "tool-output-available" not in kinds
    assert DELETED == []


def test_an_approval_runs_the_tool_once_and_the_answer_streams(
    served: tuple[httpx.Client, Model],
) -> None:
    http, model = served
    message = answered(pause(http), del_1=True)
    model.requests.clear()
    body = {**chat_body(user("notes.txt"), message), "messageId": "a1"}
    response = http.post(CHAT, json=body)
    assert response.status_code == 200, response.text
    sent = chunks(response.text)
    assert sent[0] == {"type": "start", "messageId": "a1"}  # the paused message goes on
    assert sent[1] == {
        "type": "tool-output-available",
        "toolCallId": "del-1",
        "output": "deleted notes.txt",
    }
    assert DELETED == ["notes.txt"]
    (request,) = model.requests  # the model is asked once more, with the tool's answer
    roles = [message.role for message in request.interaction.messages]
    assert roles == ["user", "assistant", "tool"]
    text = "".join(chunk["delta"] for chunk in sent if chunk["type"] == "text-delta")
    assert json.loads(text) == {"coat": "deleted notes.txt"}
    # the same answer again is a replay: refused, and the file is not deleted twice
    assert refusal(http.post(CHAT, json=body)) == (400, "TQX_CONTINUATION_INVALID")
    assert DELETED == ["notes.txt"]


def test_a_denial_is_a_message_the_model_reads_and_nothing_runs(
    served: tuple[httpx.Client, Model],
) -> None:
    http, model = served
    message = answered(pause(http), del_1="keep my notes")
    model.requests.clear()
    response = http.post(CHAT, json=chat_body(user("notes.txt"), message))
    assert response.status_code == 200, response.text
    sent = chunks(response.text)
    assert {"type": "tool-output-denied", "toolCallId": "del-1"} in sent
    assert DELETED == []
    (request,) = model.requests
    told = request.interaction.messages[-1]
    assert told.content == "denied: tool 'delete_file' was not run: keep my notes"


def test_a_forged_or_foreign_continuation_is_refused_and_nothing_runs(
    served: tuple[httpx.Client, Model],
) -> None:
    http, _ = served
    message = answered(pause(http), del_1=True)
    forged = json.loads(json.dumps(message))
    (part,) = [p for p in forged["parts"] if p["type"] == "data-runport-continuation"]
    body, mac = part["data"].rsplit(".", 1)
    part["data"] = f"{body}.{'A' if mac[0] != 'A' else 'B'}{mac[1:]}"
    response = http.post(CHAT, json=chat_body(user("notes.txt"), forged))
    assert refusal(response) == (400, "TQX_CONTINUATION_INVALID")
    other = create_app(catalog(), Model().adapter, tools=TOOLS, reasoning_key=b"k" * 32)
    with serve_in_background(other) as url:
        response = httpx.post(f"{url}{CHAT}", json=chat_body(user("x"), message), timeout=30)
    assert refusal(response) == (400, "TQX_CONTINUATION_INVALID")
    without = {
        **message,
        "parts": [p for p in message["parts"] if not p["type"].startswith("data")],
    }
    response = http.post(CHAT, json=chat_body(user("notes.txt"), without))
    assert refusal(response) == (400, "TQX_CONTINUATION_INVALID")
    assert DELETED == []


def test_approvals_must_answer_exactly_the_pending_calls(
    served: tuple[httpx.Client, Model],
) -> None:
    http, _ = served
    both = pause(http, "both")
    half = answered(both, del_1=True)  # del-2 still awaits its answer
    assert refusal(http.post(CHAT, json=chat_body(user("both"), half))) == (
        400,
        "TQX_APPROVALS_INVALID",
    )
    stray = answered(both, del_1=True, del_2=True)
    (second,) = [part for part in stray["parts"] if part.get("toolCallId") == "del-2"]
    second["toolCallId"] = "del-9"  # an answer for a call never made
    assert refusal(http.post(CHAT, json=chat_body(user("both"), stray))) == (
        400,
        "TQX_APPROVALS_INVALID",
    )
    assert DELETED == []
    # the refusals spent nothing: the right answers still resume it, each call run once
    whole = answered(both, del_1=True, del_2=False)
    response = http.post(CHAT, json=chat_body(user("both"), whole))
    assert response.status_code == 200, response.text
    assert DELETED == ["both"]


def test_an_answer_after_the_chat_moved_on_is_refused_and_an_unanswered_call_denied(
    served: tuple[httpx.Client, Model],
) -> None:
    http, model = served
    message = pause(http)
    late = answered(message, del_1=True)
    response = http.post(CHAT, json=chat_body(user("notes.txt"), late, user("coat?", "u2")))
    assert refusal(response) == (400, "TQX_APPROVALS_INVALID")
    assert DELETED == []
    model.requests.clear()
    response = http.post(CHAT, json=chat_body(user("notes.txt"), message, user("a.txt", "u2")))
    assert response.status_code == 200, response.text
    history = model.requests[0].interaction.messages
    assert history[2].content == (
        "denied: tool 'delete_file' was not run: nobody answered before the chat moved on"
    )
    assert DELETED == []


AGUI = "/v1/contracts/demo.forecast/agui"


def agui_events(text: str) -> list[dict[str, Any]]:
    frames = [block for block in text.split("\n\n") if block.strip()]
    data = [line for frame in frames for line in frame.split("\n") if line.startswith("data: ")]
    return [json.loads(line.removeprefix("data: ")) for line in data]


def agui_input(run_id: str, **more: Any) -> dict[str, Any]:
    message = {"id": "u1", "role": "user", "content": "notes.txt"}
    return {"threadId": "t1", "runId": run_id, "messages": [message], **more}


def test_ag_ui_pauses_with_an_interrupt_and_its_resume_entries_go_on(
    served: tuple[httpx.Client, Model],
) -> None:
    http, model = served
    sent = agui_events(http.post(AGUI, json=agui_input("r1")).text)
    finished = sent[-1]
    assert finished["type"] == "RUN_FINISHED"
    (interrupt,) = finished["outcome"]["interrupts"]
    assert finished["outcome"]["type"] == "interrupt"
    assert interrupt["id"] == interrupt["toolCallId"] == "del-1"
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert DELETED == []
    entry = {"interruptId": "del-1", "metadata": interrupt["metadata"]}
    denied = {**entry, "status": "resolved", "payload": {"approved": False, "reason": "no"}}
    model.requests.clear()
    resumed = agui_events(http.post(AGUI, json=agui_input("r2", resume=[denied])).text)
    (result,) = [event for event in resumed if event["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == "denied: tool 'delete_file' was not run: no"
    assert resumed[-1]["type"] == "RUN_FINISHED"
    assert resumed[-1]["result"] == {"coat": "denied: tool 'delete_file' was not run: no"}
    assert DELETED == []
    # a replay of the same answers, and an answer without the continuation: coded, nothing run
    again = http.post(AGUI, json=agui_input("r3", resume=[denied]))
    assert (again.status_code, again.json()["code"]) == (400, "TQX_CONTINUATION_INVALID")
    bare = {"interruptId": "del-1", "status": "resolved", "payload": {"approved": True}}
    response = http.post(AGUI, json=agui_input("r4", resume=[bare]))
    assert (response.status_code, response.json()["code"]) == (400, "TQX_CONTINUATION_INVALID")
    assert DELETED == []


def test_ag_ui_approval_runs_the_tool_once(served: tuple[httpx.Client, Model]) -> None:
    http, _ = served
    sent = agui_events(http.post(AGUI, json=agui_input("r1")).text)
    (interrupt,) = sent[-1]["outcome"]["interrupts"]
    entry = {"interruptId": "del-1", "metadata": interrupt["metadata"]}
    approve = {**entry, "status": "resolved", "payload": {"approved": True}}
    stray = {**entry, "interruptId": "del-7", "status": "cancelled"}
    response = http.post(AGUI, json=agui_input("r2", resume=[approve, stray]))
    assert (response.status_code, response.json()["code"]) == (400, "TQX_APPROVALS_INVALID")
    resumed = agui_events(http.post(AGUI, json=agui_input("r3", resume=[approve])).text)
    assert resumed[-1]["result"] == {"coat": "deleted notes.txt"}
    assert DELETED == ["notes.txt"]


def test_a_resumable_server_spends_the_continuation_in_its_log_once() -> None:
    model = Model()
    log = MemoryEventLog()
    app = create_app(catalog(), model.adapter, tools=TOOLS, reasoning_key=KEY, event_log=log)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        both = pause(http, "both")
        half = answered(both, del_1=True)  # refused before the log spends anything
        response = http.post(CHAT, json=chat_body(user("both"), half))
        assert refusal(response) == (400, "TQX_APPROVALS_INVALID")
        whole = chat_body(user("both"), answered(both, del_1=True, del_2=True))
        response = http.post(CHAT, json=whole)
        assert response.status_code == 200, response.text
        assert chunks(response.text)[-1]["type"] == "finish"
        assert refusal(http.post(CHAT, json=whole)) == (400, "TQX_CONTINUATION_INVALID")
    assert DELETED == ["both", "both"]


@pytest.fixture(scope="module")
def restarted() -> Iterator[httpx.Client]:
    """Another server with the same key: the process that resumes after a restart."""
    app = create_app(catalog(), Model().adapter, tools=TOOLS, reasoning_key=KEY)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


DECISIONS = st.one_of(st.booleans(), st.sampled_from(["not now", "keep it"]))


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(decisions=st.lists(DECISIONS, min_size=1, max_size=3), wrong_first=st.booleans())
def test_each_approved_call_runs_once_whatever_the_answers_and_wherever_it_resumes(
    served: tuple[httpx.Client, Model],
    restarted: httpx.Client,
    decisions: list[bool | str],
    wrong_first: bool,
) -> None:
    http, _ = served
    DELETED.clear()
    said = f"n={len(decisions)}"
    message = pause(http, said)
    answers = {f"del_{n}": decision for n, decision in enumerate(decisions, start=1)}
    if wrong_first:  # one answer short: refused, nothing spent, nothing run
        short = answered(message, **dict(list(answers.items())[:-1]))
        assert refusal(restarted.post(CHAT, json=chat_body(user(said), short)))[1] in (
            "TQX_APPROVALS_INVALID",
            "TQX_DATA_INVALID",  # no answer at all: the last message must be the user's
        )
    body = chat_body(user(said), answered(message, **answers))
    response = restarted.post(CHAT, json=body)
    assert response.status_code == 200, response.text
    sent = chunks(response.text)
    ran = [f"file{n}" for n, decision in enumerate(decisions, start=1) if decision is True]
    assert ran == DELETED
    denied = [chunk["toolCallId"] for chunk in sent if chunk["type"] == "tool-output-denied"]
    assert denied == [f"del-{n}" for n, d in enumerate(decisions, start=1) if d is not True]
    assert refusal(http.post(CHAT, json=body)) == (400, "TQX_CONTINUATION_INVALID")
    assert ran == DELETED  # the replay ran nothing


def test_a_resumed_chat_may_pause_again_with_a_fresh_continuation(
    served: tuple[httpx.Client, Model],
) -> None:
    http, _ = served
    first = pause(http, "twice")
    body = chat_body(user("twice"), answered(first, del_1=True))
    sent = chunks(http.post(CHAT, json=body).text)
    asked = [chunk for chunk in sent if chunk["type"] == "tool-approval-request"]
    assert [chunk["toolCallId"] for chunk in asked] == ["del-2"]
    assert DELETED == ["twice-a"]
    again = paused_message(sent)  # the parts the second stream added to the message
    (old,) = [p for p in first["parts"] if p["type"] == "data-runport-continuation"]
    (new,) = [p for p in again["parts"] if p["type"] == "data-runport-continuation"]
    assert new["id"] == old["id"]  # the client replaces the spent one in place
    assert new["data"] != old["data"]
    done = http.post(CHAT, json=chat_body(user("twice"), answered(again, del_2=True)))
    text = "".join(chunk["delta"] for chunk in chunks(done.text) if chunk["type"] == "text-delta")
    assert json.loads(text) == {"coat": "deleted twice-b"}
    assert DELETED == ["twice-a", "twice-b"]
