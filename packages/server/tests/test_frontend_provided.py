"""What the provider did itself — its own tools, the sources it cites, the files it makes — on
every stream the server writes (adr/0064): the UI message stream's provider-executed tool
parts, ``source-url``/``source-document`` and ``file`` parts; AG-UI's activity messages;
runport's own named frames. A model-supplied URL that is not an ``http(s)`` link is never
written where a page makes it a link, and a chat's next request carries these parts back
without any of them becoming a call. (The protocols' own clients read the same streams in
the frontend env: test_frontend_clients.py, test_frontend_chat_page.py.)"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.application import async_adapter_factory
from runport.contracts import (
    Citation,
    CitationSource,
    Complete,
    ErrorCode,
    ExecutionRequest,
    Failed,
    RunEvent,
    ServerToolCall,
)
from runport.mock import AsyncEmitter, AsyncFunctionRuntime
from runport.server import agui_stream, create_app, serve_in_background, ui_message_stream
from runport.server._frontends._provided import link

from .conftest import catalog
from .frontend_runs import SEARCH_SCENARIO, replay, search_run_events
from .sse_frames import strip_ids

PREVIEW = (
    "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAD0lEQVR4nGM4gQQYiOMAAM9hJYGWbiP1AAAAAElFTkSu"
    "QmCC"
)
IMAGE = (
    "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAGklEQVR4nGOQi1pAFcQwatCoQaMGjRpEGQIAm"
    "aOkEFy2OpIAAAAASUVORK5CYII="
)


def sent(stream: Any) -> list[dict[str, Any]]:
    """Every JSON payload an encoder wrote, in order."""

    async def collect() -> list[bytes]:
        return [chunk async for chunk in stream]

    frames = b"".join(asyncio.run(collect())).decode().split("\n\n")
    return [json.loads(f.removeprefix("data: ")) for f in frames if f and f != "data: [DONE]"]


@pytest.fixture(scope="module")
def events() -> list[RunEvent]:
    return search_run_events()


def test_the_ui_stream_writes_provider_tool_parts_sources_and_the_file(
    events: list[RunEvent],
) -> None:
    chunks = sent(ui_message_stream(replay(events)))
    shown = [c for c in chunks if c["type"] not in ("text-delta", "text-start", "text-end")]
    assert shown[:3] == [
        {"type": "start"},
        {"type": "start-step"},
        {
            "type": "tool-input-available",
            "toolCallId": "srvtoolu_1",
            "toolName": "web_search",
            "input": {"query": "Delft lighthouse"},
            "providerExecuted": True,
        },
    ]
    assert shown[3] == {
        "type": "tool-output-available",
        "toolCallId": "srvtoolu_1",
        "output": [
            {
                "type": "web_search_result",
                "url": "https://example.org/delft",
                "title": "Delft harbour",
            }
        ],
        "providerExecuted": True,
    }
    page, document = shown[4], shown[5]
    assert page == {
        "type": "source-url",
        "sourceId": page["sourceId"],
        "url": "https://example.org/delft",
        "title": "Delft harbour",
        "providerMetadata": {
            "runport": {"citedText": "The harbour has no light.", "start": 0, "end": 23}
        },
    }
    assert document == {
        "type": "source-document",
        "sourceId": document["sourceId"],
        "mediaType": "application/octet-stream",
        "title": "Harbour <i>notes</i>",
        "providerMetadata": {"runport": {"documentIndex": 0, "citedText": "no lighthouse"}},
    }
    assert page["sourceId"] != document["sourceId"]
    # the javascript: URL is no link: nothing is written for it (the receipt keeps it)
    assert "javascript:alert(1)" not in json.dumps(shown[:-3])
    assert shown[6] == {
        "type": "data-runport-file-preview",
        "id": "file-1-1",
        "data": {"mediaType": "image/png", "url": f"data:image/png;base64,{PREVIEW}"},
        "transient": True,
    }
    assert shown[7] == {
        "type": "file",
        "mediaType": "image/png",
        "url": f"data:image/png;base64,{IMAGE}",
    }
    receipt = shown[8]
    assert receipt["type"] == "data-runport-receipt"
    (file,) = receipt["data"]["files"]  # by digest: the file part carried the bytes once
    assert file == {
        "kind": "file",
        "media_type": "image/png",
        "sha256": file["sha256"],
        "size": len(base64.b64decode(IMAGE)),
    }
    assert len(receipt["data"]["citations"]) == 3
    assert [c["type"] for c in shown[9:]] == ["finish-step", "finish"]
    # the text around the sources is one part; the text after the file would be a new one
    texts = [c["delta"] for c in chunks if c["type"] == "text-delta"]
    assert "".join(texts) == "Delft has no lighthouse; here is one drawn."
    assert sum(c["type"] == "text-start" for c in chunks) == 1


def test_ag_ui_writes_activity_messages_for_the_provider_s_work(events: list[RunEvent]) -> None:
    chunks = sent(agui_stream(replay(events), thread_id="t", run_id="r"))
    activity = [c for c in chunks if c["type"].startswith("ACTIVITY_")]
    assert activity[0] == {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "r-m1-server-srvtoolu_1",
        "activityType": "runport.server_tool",
        "content": {
            "callId": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "Delft lighthouse"},
            "status": "running",
        },
    }
    assert activity[1]["type"] == "ACTIVITY_DELTA"
    assert activity[1]["patch"][0] == {"op": "replace", "path": "/status", "value": "done"}
    assert activity[1]["patch"][1]["path"] == "/output"
    sources = activity[2:4]
    assert [s["type"] for s in sources] == ["ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA"]
    assert sources[0]["content"]["sources"][0]["url"] == "https://example.org/delft"
    assert sources[1]["patch"] == [
        {
            "op": "add",
            "path": "/sources/-",
            "value": {
                "type": "document",
                "title": "Harbour <i>notes</i>",
                "documentIndex": 0,
                "citedText": "no lighthouse",
            },
        }
    ]
    preview, whole = activity[4:]
    assert preview["messageId"] == whole["messageId"] == "r-m1-file1"  # the file replaces it
    assert preview["content"]["partial"] is True
    assert whole["content"] == {
        "mediaType": "image/png",
        "url": f"data:image/png;base64,{IMAGE}",
        "partial": False,
    }
    assert "javascript:" not in json.dumps(activity)
    # no server tool is a TOOL_CALL_*: a client would send it back as its own call
    assert not any(c["type"].startswith("TOOL_CALL") for c in chunks)


def test_a_failed_turn_ends_its_unanswered_server_tools_in_both_protocols() -> None:
    call = ServerToolCall(call_id="srv-9", name="code_execution", input={"code": "1+1"})
    failed = Failed(code=ErrorCode.RUNTIME_UNAVAILABLE, message="gone")
    ui = sent(ui_message_stream(replay([call, failed])))
    assert {
        "type": "tool-output-error",
        "toolCallId": "srv-9",
        "errorText": "TQX_RUNTIME_UNAVAILABLE: gone",
        "providerExecuted": True,
    } in ui
    agui = sent(agui_stream(replay([call, failed]), thread_id="t", run_id="r"))
    (ended,) = [c for c in agui if c["type"] == "ACTIVITY_DELTA"]
    assert ended["patch"] == [
        {"op": "replace", "path": "/status", "value": "failed"},
        {"op": "add", "path": "/error", "value": "TQX_RUNTIME_UNAVAILABLE: gone"},
    ]


@settings(deadline=None, max_examples=60)
@given(
    scheme=st.sampled_from(["javascript", "data", "file", "vbscript", "ftp", "", "JavaScript"]),
    rest=st.text(min_size=0, max_size=20),
)
def test_only_an_http_url_with_a_host_is_ever_a_link(scheme: str, rest: str) -> None:
    url = f"{scheme}:{rest}" if scheme else rest
    assert link(url) is None
    source = CitationSource(type="url", url=url)
    chunks = sent(ui_message_stream(replay([Citation(source=source)])))
    assert not any(c["type"] == "source-url" for c in chunks)


def test_an_http_link_is_shown_as_it_came_and_a_spaced_or_hostless_one_is_not() -> None:
    assert link("https://example.org/a?b=c#d") == "https://example.org/a?b=c#d"
    assert link("HTTP://example.org") == "HTTP://example.org"
    assert link("https:///no-host") is None
    assert link("https://exa mple.org") is None
    assert link("https://example.org/\n") is None


# ---- through runport serve's routes --------------------------------------------------------


class Recording:
    """A model that keeps the requests it was sent and answers with text."""

    def __init__(self) -> None:
        self.requests: list[ExecutionRequest] = []

    async def handler(self, request: ExecutionRequest, emit: AsyncEmitter) -> None:
        self.requests.append(request)
        await emit.text("Again.")
        await emit.finish("stop")


@pytest.fixture(scope="module")
def served() -> Iterator[httpx.Client]:
    app = create_app(catalog(), async_adapter_factory("mock", scenario=SEARCH_SCENARIO))
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def test_runport_s_own_stream_names_each_new_event_by_its_kind(served: httpx.Client) -> None:
    response = served.post(
        "/v1/contracts/demo.story/executions",
        json={"inputs": {"topic": "Delft"}},
        headers={"accept": "text/event-stream"},
    )
    frames = [f for f in strip_ids(response.text).split("\n\n") if f]
    named = [f.split("\n") for f in frames]
    kinds = [lines[0].removeprefix("event: ") for lines in named]
    assert kinds == [
        "ServerToolCall",
        "ServerToolResult",
        "Delta",
        "Citation",
        "Citation",
        "Citation",
        "Delta",
        "FileDelta",
        "FileDelta",
        "Complete",
        "envelope",
    ]
    data = [json.loads(lines[1].removeprefix("data: ")) for lines in named]
    assert data[0] == {
        "kind": "ServerToolCall",
        "call_id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "Delft lighthouse"},
    }
    assert data[5]["source"]["url"] == "javascript:alert(1)"  # runport's record keeps it as it came
    assert data[8] == {
        "kind": "FileDelta",
        "media_type": "image/png",
        "data": IMAGE,
        "partial": False,
    }


def test_a_chat_s_next_request_carries_these_parts_back_and_none_becomes_a_call(
    served: httpx.Client,
) -> None:
    recording = Recording()
    first = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Delft"}]}
    body = {"id": "chat-s", "messages": [first], "trigger": "submit-message"}
    answer = served.post("/v1/contracts/demo.story/chat", json=body)
    parts: list[dict[str, Any]] = [{"type": "step-start"}]
    frames = strip_ids(answer.text).split("\n\n")
    for chunk in [json.loads(f[6:]) for f in frames if f[6:7] == "{"]:
        if chunk["type"] == "tool-input-available":
            parts.append({**chunk, "type": "tool-web_search", "state": "input-available"})
        elif chunk["type"] == "tool-output-available":
            parts[-1] = {**parts[-1], "state": "output-available", "output": chunk["output"]}
        elif chunk["type"] in ("source-url", "source-document", "file"):
            parts.append(chunk)
    parts.append({"type": "text", "text": "Delft has no lighthouse; here is one drawn."})
    assert {part["type"] for part in parts} >= {"tool-web_search", "source-url", "file"}
    assistant = {"id": "a1", "role": "assistant", "parts": parts}
    second = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Oslo"}]}
    later = {"id": "chat-s", "messages": [first, assistant, second], "trigger": "submit-message"}
    app = create_app(catalog(), lambda: AsyncFunctionRuntime(recording.handler))
    with serve_in_background(app) as url:
        reply = httpx.post(f"{url}/v1/contracts/demo.story/chat", json=later, timeout=30)
        assert reply.status_code == 200, reply.text
        claimed = {**parts[1], "providerExecuted": "yes"}
        bad = {**later, "messages": [first, {**assistant, "parts": [claimed]}, second]}
        refused = httpx.post(f"{url}/v1/contracts/demo.story/chat", json=bad, timeout=30)
    (request,) = recording.requests
    history = request.interaction.messages
    assert [m.role for m in history] == ["user", "assistant", "user"]
    assert history[1].content == "Delft has no lighthouse; here is one drawn."
    assert history[1].tool_calls is None  # the provider's search is no call of the run's
    assert refused.status_code == 400
    assert "providerExecuted" in refused.json()["errorText"]


def test_a_turn_complete_without_provider_work_keeps_its_receipt_bytes(
    events: list[RunEvent],
) -> None:
    plain = next(e for e in events if isinstance(e, Complete))
    bare = plain.receipt.model_copy(update={"files": None, "citations": None, "server_tools": None})
    chunks = sent(ui_message_stream(replay([Complete(receipt=bare)])))
    (receipt,) = [c for c in chunks if c["type"] == "data-runport-receipt"]
    assert receipt["data"] == json.loads(bare.model_dump_json())


_TEXT = st.text(max_size=12)


@settings(deadline=None, max_examples=80)
@given(
    page=st.booleans(),
    title=st.none() | _TEXT,
    filename=st.none() | _TEXT.filter(bool),
    cited=st.none() | _TEXT,
    path=_TEXT,
    span=st.none() | st.tuples(st.integers(0, 9), st.integers(0, 9)).map(sorted),
)
def test_a_citation_s_frames_are_json_holding_its_values_whatever_its_strings(
    page: bool,
    title: str | None,
    filename: str | None,
    cited: str | None,
    path: str,
    span: list[int] | None,
) -> None:
    # the citation frames are joined by hand, not by a JSON encoder: quotes, backslashes,
    # control characters, lone surrogates all stay JSON, and come back as they went
    url = "https://example.org/" + "".join(ch for ch in path if ch.isalnum())
    if page:
        source = CitationSource(type="url", url=url, title=title)
    else:
        source = CitationSource(type="document", title=title, filename=filename, document_index=2)
    start, end = span if span is not None else (None, None)
    citation = Citation(source=source, cited_text=cited, start=start, end=end)
    (ui,) = [c for c in sent(ui_message_stream(replay([citation]))) if "sourceId" in c]
    agui = sent(agui_stream(replay([citation]), thread_id="t", run_id="r"))
    (shown,) = [c["content"]["sources"][0] for c in agui if c["type"] == "ACTIVITY_SNAPSHOT"]
    more = ui.get("providerMetadata", {}).get("runport", {})
    assert more.get("citedText") == shown.get("citedText") == cited
    assert more.get("start") == shown.get("start") == start
    assert shown.get("title") == title
    if page:
        assert (ui["type"], ui["url"], ui.get("title")) == ("source-url", url, title)
    else:
        assert ui["type"] == "source-document"
        assert ui["title"] == (title or filename or "document 2")
        assert ui.get("filename") == shown.get("filename") == filename
        assert more["documentIndex"] == shown["documentIndex"] == 2
