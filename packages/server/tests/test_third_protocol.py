"""A third frontend protocol is one ``FrontendProtocol`` and one registry line (adr/0041): this
one, defined here alone, gets its route, its refusals, numbered frames, a resumable run and a
replay through ``/v1/runs/{id}/events`` in its own bare frames — and nothing else changed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import JsonValue

from runport.application import RunError, async_adapter_factory
from runport.contracts import (
    AnswerRejected,
    Complete,
    Delta,
    Failed,
    OutputSnapshot,
    ReasoningDelta,
    ToolCallDelta,
    ToolResult,
)
from runport.core import Contract
from runport.server import MemoryEventLog, create_app, serve_in_background
from runport.server._errors import RequestRefused
from runport.server._frontends import _registry
from runport.server._frontends._chat import chat_input
from runport.server._frontends._encoder import RunEventEncoder
from runport.server._frontends._protocol import ChatCall, FrontendProtocol

from .conftest import SCENARIO, catalog
from .sse_frames import parse
from .test_chat_approvals import DELETED, Model
from .test_chat_approvals import TOOLS as APPROVAL_TOOLS


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class LinesEncoder(RunEventEncoder):
    """Text as it comes, then the end: the smallest protocol there is."""

    def start(self) -> list[bytes]:
        return [b'{"open":true}']

    def end(self, error: RunError | None = None) -> list[bytes]:
        return [_json({"end": "ok" if error is None else error.code})]

    def _delta(self, event: Delta, out: list[bytes]) -> None:
        out.append(_json({"text": event.text}))

    def _reasoning_delta(self, event: ReasoningDelta, out: list[bytes]) -> None: ...

    def _tool_call_delta(self, event: ToolCallDelta, out: list[bytes]) -> None: ...

    def _complete(self, event: Complete, out: list[bytes]) -> None:
        out.append(_json({"turn": event.receipt.finish_reason}))

    def _failed(self, event: Failed, out: list[bytes]) -> None: ...

    def _tool_result(self, event: ToolResult, out: list[bytes]) -> None: ...

    def _snapshot(self, event: OutputSnapshot, out: list[bytes]) -> None: ...

    def _rejected(self, event: AnswerRejected, out: list[bytes]) -> None: ...


LINES_HEADERS = {"content-type": "text/event-stream; charset=utf-8", "x-lines": "1"}


class Lines(FrontendProtocol):
    """``POST /v1/contracts/{id}/lines`` with ``{"chat": ID, "say": TEXT}``."""

    name = "lines"
    segment = "lines"
    headers = LINES_HEADERS
    closing = (b'"bye"',)

    def parse(self, body: bytes, contract: Contract) -> ChatCall:
        data = json.loads(body)
        if not isinstance(data, dict) or not isinstance(data.get("say"), str):
            raise RequestRefused(400, "TQX_DATA_INVALID", "say what?")  # type: ignore[arg-type]
        return ChatCall(str(data["chat"]), {chat_input(contract): data["say"]}, None, [], None)

    def encoder(self, call: ChatCall, *, resumable: bool) -> RunEventEncoder:
        return LinesEncoder()

    def refusal_body(self, refused: RequestRefused) -> dict[str, JsonValue]:
        return {"lines": "refused", "why": refused.message}

    def failed(self, code: str, message: str) -> list[bytes]:
        return [_json({"end": code})]


@pytest.fixture
def with_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "FRONTENDS", (*_registry.FRONTENDS, Lines))


def _served(resumable: bool) -> Iterator[httpx.Client]:
    log = MemoryEventLog() if resumable else None
    app = create_app(catalog(), async_adapter_factory("mock", scenario=SCENARIO), event_log=log)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


LINES = "/v1/contracts/demo.story/lines"


@pytest.mark.usefixtures("with_lines")
@pytest.mark.parametrize("resumable", [False, True], ids=["direct", "resumable"])
def test_a_third_protocol_is_one_object_and_one_registry_line(resumable: bool) -> None:
    for http in _served(resumable):
        response = http.post(LINES, json={"chat": "c1", "say": "ships"})
        assert response.status_code == 200, response.text
        assert response.headers["x-lines"] == "1"
        run_id = response.headers["x-runport-run-id"]
        frames = parse(response.text)
        assert [frame.seq for frame in frames] == list(range(1, len(frames) + 1))
        assert {frame.run_id for frame in frames} == {run_id}
        assert all(frame.event == "message" for frame in frames)  # bare data: frames
        data = [json.loads(frame.data) for frame in frames]
        assert data[0] == {"open": True}
        assert data[-2:] == [{"end": "ok"}, "bye"]
        assert "".join(item["text"] for item in data if "text" in item)
        assert {"turn": "stop"} in data

        refused = http.post(LINES, json={"chat": "c1"})
        assert refused.status_code == 400
        assert refused.json() == {"lines": "refused", "why": "say what?"}

        if resumable:  # the run replays in its own protocol, from any route
            replay = http.get(f"/v1/runs/{run_id}/events")
            assert [(f.seq, f.event, f.data) for f in parse(replay.text)] == [
                (f.seq, f.event, f.data) for f in frames
            ]
        # the other protocols are untouched
        assert http.post("/v1/contracts/demo.story/chat", json={}).status_code == 400


def test_without_its_registry_line_there_is_no_route() -> None:
    for http in _served(False):
        assert http.post(LINES, json={"chat": "c1", "say": "ships"}).status_code == 404


@pytest.mark.usefixtures("with_lines")
def test_a_run_that_pauses_on_a_protocol_without_pauses_ends_coded_and_runs_nothing() -> None:
    DELETED.clear()
    app = create_app(catalog(), Model().adapter, tools=APPROVAL_TOOLS)
    with serve_in_background(app) as url:
        body = {"chat": "c1", "say": "notes.txt"}
        response = httpx.post(f"{url}/v1/contracts/demo.forecast/lines", json=body, timeout=30)
    data = [json.loads(frame.data) for frame in parse(response.text)]
    assert data[-2:] == [{"end": "TQX_APPROVALS_INVALID"}, "bye"]
    assert DELETED == []
