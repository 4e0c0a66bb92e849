"""The frontend protocols' own clients accept runport's streams: the ``ai`` package reads a
UI message stream into the UIMessage a chat UI renders, and ``@ag-ui/client``'s HttpAgent —
its schemas and its event verifier — accepts an AG-UI stream. Run in the ``frontend`` tox
env (Node and the committed lockfile); skipped elsewhere, naming that env."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from .frontend_node import ENABLED, SKIP_REASON, run_script

if not ENABLED:
    pytest.skip(SKIP_REASON, allow_module_level=True)

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from runport.application import RunError, RunPartial, Tool
from runport.contracts import ExecutionRequest, ImagePart, RunEvent, TextPart
from runport.core import parse_contract
from runport.mock import AsyncEmitter, AsyncFunctionRuntime
from runport.server import (
    AGUI_HEADERS,
    UI_MESSAGE_STREAM_HEADERS,
    agui_stream,
    create_app,
    serve_in_background,
    ui_message_stream,
)

from .conftest import catalog
from .frontend_runs import WEATHER, chat_run_events, replay, search_run_events
from .test_chat import KEY
from .test_chat_approvals import DELETED, Model
from .test_chat_approvals import TOOLS as APPROVAL_TOOLS
from .test_chat_client_tools import OFFERED
from .test_chat_client_tools import TOOLS as CLIENT_TOOLS
from .test_chat_client_tools import Model as ClientToolModel

USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Delft"}]}


def encoders_app(events: Sequence[RunEvent], error: BaseException | None = None) -> Starlette:
    """Any ASGI app serving the encoders over fixed run events."""

    async def chat(request: Request) -> StreamingResponse:
        await request.body()
        stream = ui_message_stream(replay(events, error), message_id="answer-1")
        return StreamingResponse(stream, headers=UI_MESSAGE_STREAM_HEADERS)

    async def agui(request: Request) -> StreamingResponse:
        body = await request.json()
        stream = agui_stream(
            replay(events, error), thread_id=body["threadId"], run_id=body["runId"]
        )
        return StreamingResponse(stream, headers=AGUI_HEADERS)

    return Starlette(
        routes=[Route("/chat", chat, methods=["POST"]), Route("/agui", agui, methods=["POST"])]
    )


@pytest.fixture
def served() -> Iterator[str]:
    with serve_in_background(encoders_app(chat_run_events(snapshots=True))) as url:
        yield url


def parts_of(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [part for part in message["parts"] if part["type"] == kind]


def test_the_ai_package_reads_the_run_into_the_ui_message_a_chat_renders(served: str) -> None:
    read = run_script(
        "read-ui-message-stream.mjs",
        {"api": f"{served}/chat", "chatId": "chat-1", "messages": [USER]},
    )
    assert read["errors"] == []
    message = read["message"]
    assert message["id"] == "answer-1"
    assert message["role"] == "assistant"
    kinds = [part["type"] for part in message["parts"]]
    assert kinds == [
        "step-start",
        "reasoning",
        "text",
        "tool-get_weather",
        "data-runport-receipt",
        "step-start",
        "reasoning",
        "text",
        "data-runport-output",
        "data-runport-receipt",
    ]
    reasoning = parts_of(message, "reasoning")
    assert [part["text"] for part in reasoning] == [
        "The city decides the coat; ask for the weather first.",
        "Mild and dry: ",
    ]
    assert all(part["state"] == "done" for part in reasoning)
    blocks = reasoning[0]["providerMetadata"]["runport"]["reasoning"]
    assert blocks[0]["provider_metadata"] == {"mock": {"signature": "sig-weather-1"}}
    texts = parts_of(message, "text")
    assert [part["text"] for part in texts] == [
        "Let me check the weather.",
        '{"coat": "light jacket"}',
    ]
    (tool,) = parts_of(message, "tool-get_weather")
    assert tool["state"] == "output-available"
    assert tool["toolCallId"] == "call-weather"
    assert tool["input"] == {"city": "Delft"}
    assert tool["output"] == WEATHER
    receipts = parts_of(message, "data-runport-receipt")
    assert [part["data"]["finish_reason"] for part in receipts] == ["tool_calls", "stop"]
    assert receipts[1]["data"]["output"] == {"coat": "light jacket"}
    (output,) = parts_of(message, "data-runport-output")  # one part, updated in place
    assert output["data"]["value"] == {"coat": "light jacket"}
    assert read["snapshots"] > len(message["parts"])  # the message grew as it streamed


def test_a_failed_run_reaches_the_ai_package_as_an_error_with_its_code() -> None:
    events = chat_run_events()[:3]
    failure = RunError("model", "TQX_RUNTIME_UNAVAILABLE", RunPartial(), "the upstream went away")
    with serve_in_background(encoders_app(events, failure)) as url:
        read = run_script(
            "read-ui-message-stream.mjs",
            {"api": f"{url}/chat", "chatId": "chat-1", "messages": [USER]},
        )
    # readUIMessageStream reports it to onError, then (terminateOnError) throws it
    assert set(read["errors"]) == {"TQX_RUNTIME_UNAVAILABLE: the upstream went away"}
    assert [part["type"] for part in read["message"]["parts"]] == [
        "step-start",
        "reasoning",
        "text",
    ]


def test_ag_ui_s_http_agent_accepts_the_run_with_its_schemas_and_verifier(served: str) -> None:
    ran = run_script(
        "run-agui-agent.mjs",
        {
            "url": f"{served}/agui",
            "threadId": "thread-1",
            "runId": "run-1",
            "messages": [{"id": "u1", "role": "user", "content": "Delft"}],
        },
    )
    assert ran["errors"] == []
    types = [event["type"] for event in ran["events"]]
    assert types[0] == "RUN_STARTED"
    assert types[-1] == "RUN_FINISHED"
    for expected in (
        "REASONING_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_END",
        "TEXT_MESSAGE_CONTENT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
    ):
        assert expected in types, expected
    finished = ran["events"][-1]
    assert finished["result"] == {"coat": "light jacket"}
    assert finished["usage"][0]["inputTokens"] == 61
    assert ran["state"] == {"output": {"coat": "light jacket"}}
    roles = [message["role"] for message in ran["messages"]]
    assert roles == ["user", "reasoning", "assistant", "tool", "reasoning", "assistant"]
    assistant = ran["messages"][2]
    assert assistant["content"] == "Let me check the weather."
    assert assistant["toolCalls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Delft"}',
    }
    assert ran["messages"][-1]["content"] == '{"coat": "light jacket"}'


def test_a_failed_run_reaches_ag_ui_as_run_error_with_its_code() -> None:
    events = chat_run_events()[:3]
    failure = RunError("tool", "TQX_TOOL_FAILED", RunPartial(), "get_weather raised")
    with serve_in_background(encoders_app(events, failure)) as url:
        ran = run_script(
            "run-agui-agent.mjs",
            {"url": f"{url}/agui", "threadId": "thread-1", "runId": "run-2", "messages": []},
        )
    last = ran["events"][-1]
    assert last["type"] == "RUN_ERROR"
    assert last["code"] == "TQX_TOOL_FAILED"
    assert [error for error in ran["errors"] if error.startswith(("schema", "warning"))] == []


# ---- files in chat messages, sent by the clients themselves -----------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))


class Seeing:
    """A model that answers every call at once and keeps the requests it was sent."""

    def __init__(self) -> None:
        self.requests: list[ExecutionRequest] = []

    async def handler(self, request: ExecutionRequest, emit: AsyncEmitter) -> None:
        self.requests.append(request)
        await emit.text(f"Answer {len(self.requests)}.")
        await emit.finish("stop")

    def adapter(self) -> AsyncFunctionRuntime:
        return AsyncFunctionRuntime(self.handler)


def photo_app(seeing: Seeing) -> Starlette:
    contract = parse_contract(
        {
            "api_version": "runport/v1alpha1",
            "id": "demo.photo",
            "version": "1.0.0",
            "inputs": {
                "question": {"schema": {"type": "string", "minLength": 1}, "required": True},
                "photo": {"kind": "image"},
            },
            "messages": [{"role": "user", "content": "{{ inputs.question }}{{ inputs.photo }}"}],
            "output_schema": {"type": "string"},
        }
    )
    return create_app([contract], seeing.adapter)


def test_the_ai_sdk_s_chat_sends_a_file_part_and_the_run_sees_the_image() -> None:
    seeing = Seeing()
    encoded = base64.b64encode(PNG).decode()
    photo = {"mediaType": "image/png", "filename": "lighthouse.png", "base64": encoded}
    with serve_in_background(photo_app(seeing)) as url:
        sent = run_script(
            "send-chat-files.mjs",
            {
                "api": f"{url}/v1/contracts/demo.photo/chat",
                "chatId": "chat-photo",
                "turns": [
                    {"text": "What is in it?", "files": [photo]},
                    {"text": "And its colour?"},
                ],
            },
        )
    assert sent["errors"] == []
    assert sent["status"] == "ready"
    first, answer, second, later = sent["messages"]
    assert [part["type"] for part in first["parts"]] == ["file", "text"]
    assert [part["type"] for part in second["parts"]] == ["text"]
    assert first["parts"][0]["url"] == f"data:image/png;base64,{encoded}"
    assert [part["text"] for part in answer["parts"] if part["type"] == "text"] == ["Answer 1."]
    assert [part["text"] for part in later["parts"] if part["type"] == "text"] == ["Answer 2."]
    image = ImagePart(media_type="image/png", data=encoded)
    one, two = seeing.requests
    assert one.interaction.messages[-1].content == [TextPart(text="What is in it?"), image]
    turns = two.interaction.messages
    assert [turn.role for turn in turns] == ["user", "assistant", "user"]
    assert turns[0].content == [TextPart(text="What is in it?"), image]
    assert turns[2].content == "And its colour?"


def test_ag_ui_s_http_agent_sends_an_image_part_and_the_run_sees_it() -> None:
    seeing = Seeing()
    encoded = base64.b64encode(PNG).decode()
    content = [
        {"type": "text", "text": "What is in it?"},
        {"type": "image", "source": {"type": "data", "value": encoded, "mimeType": "image/png"}},
    ]
    with serve_in_background(photo_app(seeing)) as url:
        ran = run_script(
            "run-agui-agent.mjs",
            {
                "url": f"{url}/v1/contracts/demo.photo/agui",
                "threadId": "thread-photo",
                "runId": "run-1",
                "messages": [{"id": "u1", "role": "user", "content": content}],
            },
        )
    assert ran["errors"] == []
    assert ran["events"][-1]["type"] == "RUN_FINISHED"
    assert ran["events"][-1]["result"] == "Answer 1."
    (request,) = seeing.requests
    assert request.interaction.messages[-1].content == [
        TextPart(text="What is in it?"),
        ImagePart(media_type="image/png", data=encoded),
    ]


# ---- what the provider did itself (adr/0064) -------------------------------------------------


@pytest.fixture(scope="module")
def provided() -> Iterator[str]:
    with serve_in_background(encoders_app(search_run_events())) as url:
        yield url


def test_the_ai_package_reads_sources_a_file_and_a_provider_executed_tool(provided: str) -> None:
    read = run_script(
        "read-ui-message-stream.mjs",
        {"api": f"{provided}/chat", "chatId": "chat-search", "messages": [USER]},
    )
    assert read["errors"] == []
    message = read["message"]
    kinds = [part["type"] for part in message["parts"]]
    assert kinds == [
        "step-start",
        "tool-web_search",
        "text",
        "source-url",
        "source-document",
        "file",
        "data-runport-receipt",
    ]  # the preview was transient: not kept in the message
    (search,) = parts_of(message, "tool-web_search")
    assert search["providerExecuted"] is True
    assert search["state"] == "output-available"
    assert search["input"] == {"query": "Delft lighthouse"}
    assert search["output"][0]["url"] == "https://example.org/delft"
    (page,) = parts_of(message, "source-url")
    assert page["url"] == "https://example.org/delft"
    assert page["title"] == "Delft harbour"
    assert page["providerMetadata"]["runport"]["citedText"] == "The harbour has no light."
    (document,) = parts_of(message, "source-document")
    assert document["title"] == "Harbour <i>notes</i>"
    (image,) = parts_of(message, "file")
    assert image["mediaType"] == "image/png"
    assert image["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    (text,) = parts_of(message, "text")
    assert text["text"] == "Delft has no lighthouse; here is one drawn."
    assert "javascript:" not in str(
        [p for p in message["parts"] if p["type"] != "data-runport-receipt"]
    )


def test_ag_ui_s_http_agent_holds_the_provider_s_work_as_activity_messages(provided: str) -> None:
    ran = run_script(
        "run-agui-agent.mjs",
        {
            "url": f"{provided}/agui",
            "threadId": "thread-search",
            "runId": "run-s",
            "messages": [{"id": "u1", "role": "user", "content": "Delft"}],
        },
    )
    assert ran["errors"] == []
    activities = {m["activityType"]: m for m in ran["messages"] if m["role"] == "activity"}
    assert set(activities) == {"runport.server_tool", "runport.sources", "runport.file"}
    search = activities["runport.server_tool"]["content"]
    assert search["status"] == "done"  # the snapshot, patched by the client
    assert search["name"] == "web_search"
    assert search["output"][0]["title"] == "Delft harbour"
    sources = activities["runport.sources"]["content"]["sources"]
    assert [source["type"] for source in sources] == ["url", "document"]
    image = activities["runport.file"]["content"]
    assert image["partial"] is False  # the whole file replaced its preview
    assert image["url"].startswith("data:image/png;base64,")
    (assistant,) = [m for m in ran["messages"] if m["role"] == "assistant"]
    assert assistant["content"] == "Delft has no lighthouse; here is one drawn."
    assert "toolCalls" not in assistant  # the provider's search is no call of the client's


@pytest.fixture
def approving() -> Iterator[tuple[str, Model]]:
    model = Model()
    app = create_app(catalog(), model.adapter, tools=APPROVAL_TOOLS, reasoning_key=KEY)
    DELETED.clear()
    with serve_in_background(app) as url:
        yield url, model


def test_the_ai_package_holds_the_approval_request_and_goes_on_with_the_answer(
    approving: tuple[str, Model],
) -> None:
    url, _ = approving
    api = f"{url}/v1/contracts/demo.forecast/chat"
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "notes.txt"}]}
    read = run_script("read-ui-message-stream.mjs", {"api": api, "chatId": "c", "messages": [user]})
    assert read["errors"] == []
    paused = read["message"]
    (tool,) = parts_of(paused, "tool-delete_file")
    assert tool["state"] == "approval-requested"
    assert tool["approval"] == {"id": "del-1"}
    assert tool["input"] == {"path": "notes.txt"}
    (sealed,) = parts_of(paused, "data-runport-continuation")
    assert sealed["data"].startswith("rp1.")
    assert DELETED == []
    # what addToolApprovalResponse({id: "del-1", approved: true}) makes of the part
    tool.update(state="approval-responded", approval={"id": "del-1", "approved": True})
    request = {"api": api, "chatId": "c", "messages": [user, paused], "continues": True}
    read = run_script("read-ui-message-stream.mjs", request)
    assert read["errors"] == []
    done = read["message"]
    assert done["id"] == paused["id"]  # the same assistant message, gone on
    (tool,) = parts_of(done, "tool-delete_file")
    assert tool["state"] == "output-available"
    assert tool["output"] == "deleted notes.txt"
    assert [part["text"] for part in parts_of(done, "text")] == ['{"coat": "deleted notes.txt"}']
    assert DELETED == ["notes.txt"]


@pytest.mark.parametrize(("approved", "deleted"), [(True, ["notes.txt"]), (False, [])])
def test_ag_ui_s_http_agent_answers_the_interrupt_with_its_resume_entries(
    approving: tuple[str, Model], approved: bool, deleted: list[str]
) -> None:
    url, _ = approving
    user = {"id": "u1", "role": "user", "content": "notes.txt"}
    ran = run_script(
        "answer-agui-interrupts.mjs",
        {
            "url": f"{url}/v1/contracts/demo.forecast/agui",
            "threadId": "t1",
            "messages": [user],
            "approved": approved,
            "reason": None if approved else "keep it",
        },
    )
    assert ran["errors"] == []
    (interrupt,) = ran["interrupts"]
    assert interrupt["toolCallId"] == "del-1"
    answer = "deleted notes.txt" if approved else "denied: tool 'delete_file' was not run: keep it"
    assert ran["result"] == {"coat": answer}
    assert deleted == DELETED


@pytest.fixture
def client_tools() -> Iterator[str]:
    model = ClientToolModel()
    app = create_app(
        catalog(),
        lambda: AsyncFunctionRuntime(model.handler),
        tools=CLIENT_TOOLS,
        reasoning_key=KEY,
    )
    with serve_in_background(app) as url:
        yield url


def test_the_ai_package_leaves_a_client_call_to_the_page_and_goes_on_with_its_output(
    client_tools: str,
) -> None:
    """The ``ai`` package reads the paused stream into a tool part ``input-available`` with
    no output (what ``useChat`` hands ``onToolCall``), and the message ``addToolOutput`` makes
    of it resumes the run into the same message."""
    api = f"{client_tools}/v1/contracts/demo.forecast/chat"
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "here"}]}
    read = run_script("read-ui-message-stream.mjs", {"api": api, "chatId": "c", "messages": [user]})
    assert read["errors"] == []
    paused = read["message"]
    (tool,) = parts_of(paused, "tool-locate")
    assert tool["state"] == "input-available"
    assert tool["input"] == {"precise": True}
    assert "output" not in tool
    (sealed,) = parts_of(paused, "data-runport-continuation")
    assert sealed["data"].startswith("rp1.")
    # what addToolOutput({tool: "locate", toolCallId: "loc-1", output}) makes of the part
    tool.update(state="output-available", output={"city": "Oslo"})
    request = {"api": api, "chatId": "c", "messages": [user, paused], "continues": True}
    read = run_script("read-ui-message-stream.mjs", request)
    assert read["errors"] == []
    done = read["message"]
    assert done["id"] == paused["id"]
    (tool,) = parts_of(done, "tool-locate")
    assert tool["state"] == "output-available"
    assert tool["output"] == {"city": "Oslo"}
    (text,) = parts_of(done, "text")
    assert json.loads(text["text"]) == {"coat": '{"city":"Oslo"}'}


@pytest.fixture
def offering() -> Iterator[str]:
    model = ClientToolModel()
    app = create_app(catalog(), lambda: AsyncFunctionRuntime(model.handler), reasoning_key=KEY)
    with serve_in_background(app) as url:
        yield url


def test_ag_ui_s_http_agent_offers_its_tool_and_runs_again_with_the_result(offering: str) -> None:
    """``HttpAgent`` offers the page's tool, takes ``RUN_FINISHED``'s ``pendingToolCallIds``
    and the state, and — the tool's result added as a tool message — runs again, sending that
    state back unasked: the run resumes from the continuation it carries."""
    ran = run_script(
        "run-agui-agent.mjs",
        {
            "url": f"{offering}/v1/contracts/demo.forecast/agui",
            "threadId": "t-client",
            "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "here"}],
            "tools": OFFERED,
            "toolResults": {"loc-1": "in Oslo"},
        },
    )
    assert ran["errors"] == []
    finished = [event for event in ran["events"] if event["type"] == "RUN_FINISHED"]
    assert [event.get("outcome") for event in finished] == [
        {"type": "success", "pendingToolCallIds": ["loc-1"]},
        None,
    ]
    assert ran["result"] == {"coat": "in Oslo"}


# ---- a generator tool's progress, read by the clients themselves -------------------------------


def count_up(upto: int) -> Iterator[dict[str, int]]:
    """Count up, saying how far it got."""
    for done in range(1, upto + 1):
        yield {"counted": done, "of": upto}
    return {"total": upto}  # type: ignore[misc]


class Counting:
    """Asks for ``count_up`` to 2, then answers with the tool message it got."""

    async def handler(self, request: ExecutionRequest, emit: AsyncEmitter) -> None:
        last = request.interaction.messages[-1]
        if last.role == "user":
            await emit.tool_call("count_up", {"upto": 2}, call_id="count-1")
            await emit.finish("tool_calls")
            return
        await emit.text(json.dumps({"coat": last.content}))
        await emit.finish("stop")


@pytest.fixture(scope="module")
def counting() -> Iterator[str]:
    counting = Counting()
    tools = [Tool.from_function(count_up)]
    app = create_app(catalog(), lambda: AsyncFunctionRuntime(counting.handler), tools=tools)
    with serve_in_background(app) as url:
        yield f"{url}/v1/contracts/demo.forecast"


def test_the_ai_package_shows_a_tool_s_progress_as_preliminary_output_then_its_result(
    counting: str,
) -> None:
    read = run_script(
        "read-ui-message-stream.mjs",
        {"api": f"{counting}/chat", "chatId": "c", "messages": [USER]},
    )
    assert read["errors"] == []
    shown = [
        (tool["state"], tool.get("output"), tool.get("preliminary"))
        for (tool,) in read["toolParts"]
    ]
    assert shown[0][0] == "input-streaming"
    outputs = shown[shown.index(("input-available", None, None)) + 1 :]
    assert outputs == [
        ("output-available", {"counted": 1, "of": 2}, True),
        ("output-available", {"counted": 2, "of": 2}, True),
        ("output-available", {"total": 2}, None),  # the result replaced the progress
    ]
    (tool,) = parts_of(read["message"], "tool-count_up")
    assert tool["toolCallId"] == "count-1"
    (text,) = parts_of(read["message"], "text")
    assert json.loads(text["text"]) == {"coat": '{"total":2}'}


def test_ag_ui_s_http_agent_accepts_a_tool_s_progress_as_custom_events(counting: str) -> None:
    ran = run_script(
        "run-agui-agent.mjs",
        {
            "url": f"{counting}/agui",
            "threadId": "t-count",
            "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "Delft"}],
        },
    )
    assert ran["errors"] == []  # its schemas, its verifier, and no warning
    custom = [event for event in ran["events"] if event["type"] == "CUSTOM"]
    progress = [event for event in custom if event["name"] == "runport.tool_progress"]
    assert [(event["name"], event["value"]) for event in progress] == [
        ("runport.tool_progress", {"call_id": "count-1", "data": {"counted": 1, "of": 2}}),
        ("runport.tool_progress", {"call_id": "count-1", "data": {"counted": 2, "of": 2}}),
    ]
    at = [event for event in ran["events"] if event not in custom or event in progress]
    types = [event.get("name", event["type"]) for event in at]
    assert types.index("TOOL_CALL_END") < types.index("runport.tool_progress")
    assert types.index("runport.tool_progress") < types.index("TOOL_CALL_RESULT")
    (result,) = [event for event in ran["events"] if event["type"] == "TOOL_CALL_RESULT"]
    assert json.loads(result["content"]) == {"total": 2}
    assert ran["result"] == {"coat": '{"total":2}'}
