"""Numbered frames on the chat (UI message stream) and AG-UI routes, and the AI SDK's resume
route ``GET /v1/contracts/{id}/chat/{chat_id}/stream`` with ``--resumable``, over real
uvicorn on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import httpx

from runport.contracts import ErrorCode
from runport.server import MemoryEventLog, create_app, serve_in_background

from .conftest import PacedUpstream, catalog
from .sse_frames import Frame, check_numbered, frames, parse, read_some

STORY_CHAT = "/v1/contracts/demo.story/chat"
STORY_AGUI = "/v1/contracts/demo.story/agui"


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def chat_body(chat_id: str = "chat-1") -> dict[str, Any]:
    return {"id": chat_id, "messages": [user("ships")], "trigger": "submit-message"}


def agui_body() -> dict[str, Any]:
    return {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "ships"}],
        "tools": [],
        "context": [],
        "state": None,
        "forwardedProps": None,
    }


def _types(got: list[Frame]) -> list[str]:
    return [json.loads(frame.data)["type"] for frame in got if frame.data != "[DONE]"]


def test_every_chat_and_agui_frame_carries_the_run_id_and_its_number(
    paced: PacedUpstream,
) -> None:
    app = create_app(catalog(), paced.adapter)
    paced.release(100)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        chat = http.post(STORY_CHAT, json=chat_body())
        agui = http.post(STORY_AGUI, json=agui_body())
    for response in (chat, agui):
        assert response.status_code == 200, response.text
        got = parse(response.text)
        check_numbered(got, response.headers["x-runport-run-id"])
        assert all(frame.event == "message" for frame in got)  # no event: line
    assert parse(chat.text)[-1].data == "[DONE]"
    assert _types(parse(chat.text))[0] == "start"
    assert _types(parse(agui.text))[0] == "RUN_STARTED"


def test_a_chat_cut_midway_is_resumed_by_the_ai_sdk_route(paced: PacedUpstream) -> None:
    app = create_app(catalog(), paced.adapter, event_log=MemoryEventLog())
    stream = f"{STORY_CHAT}/chat-1/stream"
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        assert http.get(stream).status_code == 204  # no run yet
        paced.release(1)
        with http.stream("POST", STORY_CHAT, json=chat_body()) as response:
            assert response.status_code == 200
            assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
            run_id = response.headers["x-runport-run-id"]
            before = read_some(response, 3)
        assert not paced.closed.is_set()  # the tab is gone; the run is not
        with http.stream("GET", stream, headers={"Last-Event-ID": before[-1].id or ""}) as resumed:
            assert resumed.status_code == 200
            assert resumed.headers["x-vercel-ai-ui-message-stream"] == "v1"
            assert resumed.headers["x-runport-run-id"] == run_id
            paced.release_all()
            rest = list(frames(resumed.iter_lines()))
        whole = parse(http.get(f"/v1/runs/{run_id}/events").text)
        assert http.get(stream).status_code == 204  # finished: no active run
    got = [*before, *rest]
    check_numbered(got, run_id)
    assert got == whole
    assert got[-1].data == "[DONE]"
    text = "".join(
        json.loads(frame.data).get("delta", "")
        for frame in got
        if frame.data != "[DONE]" and json.loads(frame.data)["type"] == "text-delta"
    )
    assert text == "Once upon a time."
    assert not paced.closed.is_set()


def test_a_resumed_chat_from_its_start_and_a_busy_chat(paced: PacedUpstream) -> None:
    app = create_app(catalog(), paced.adapter, event_log=MemoryEventLog())
    stream = f"{STORY_CHAT}/chat-2/stream"
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        paced.release(1)
        with http.stream("POST", STORY_CHAT, json=chat_body("chat-2")) as response:
            run_id = response.headers["x-runport-run-id"]
            read_some(response, 2)
        busy = http.post(STORY_CHAT, json=chat_body("chat-2"))
        assert busy.status_code == 409  # its run goes on without its connection
        assert busy.json()["error"]["code"] == ErrorCode.CHAT_BUSY
        with http.stream("GET", stream) as resumed:  # what useChat({resume: true}) asks
            paced.release_all()
            got = list(frames(resumed.iter_lines()))
    check_numbered(got, run_id)  # the whole run again, from its first frame
    assert _types(got)[0] == "start"
    assert got[-1].data == "[DONE]"


def test_a_resumable_chat_names_its_message_and_replays_an_ended_run_when_asked(
    paced: PacedUpstream,
) -> None:
    """A page that kept a half-streamed answer across a reload gets it replaced: the replay's
    ``start`` names the message the first response named; with ``?finished=true`` the chat's
    last run is replayed even after it ended (a plain resume is 204 then)."""
    app = create_app(catalog(), paced.adapter, event_log=MemoryEventLog())
    stream = f"{STORY_CHAT}/chat-3/stream"
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        assert http.get(stream, params={"finished": "true"}).status_code == 204  # no run
        paced.release_all()
        first = http.post(STORY_CHAT, json=chat_body("chat-3"))
        assert http.get(stream).status_code == 204  # ended
        replayed = http.get(stream, params={"finished": "true"})
        wrong = http.get(stream, params={"finished": "yes"})
    assert replayed.status_code == 200
    assert replayed.headers["x-runport-run-id"] == first.headers["x-runport-run-id"]
    assert parse(replayed.text) == parse(first.text)
    start = json.loads(parse(first.text)[0].data)
    assert start["type"] == "start"
    assert start["messageId"].startswith("msg-")
    assert wrong.status_code == 400
    assert wrong.json()["error"]["code"] == ErrorCode.DATA_INVALID
    assert paced.calls == 1
