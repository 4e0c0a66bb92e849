"""The execution path's per-server work (adr/0035): a prepared factory (the mock's) builds
each request's adapter on the event loop with its scenario parsed once; any other factory is
still called on a worker thread; every SSE frame is the event's own JSON, encoded once."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter

import runport.mock._factory as mock_factory
import runport.server._app as server_app
from runport.application import async_adapter_factory
from runport.contracts import (
    Complete,
    Delta,
    ExecutionReceipt,
    Failed,
    ReasoningDelta,
    StreamEvent,
    ToolCallDelta,
)
from runport.mock import AsyncScriptedRuntime
from runport.server import create_app, serve_in_background
from runport.server._frames import event_frame, sse_frame

from .conftest import SCENARIO, catalog, parse_sse

STORY = "/v1/contracts/demo.story/executions"
SSE = {"Accept": "text/event-stream"}


def _story(url: str) -> list[tuple[str, Any]]:
    with httpx.Client(base_url=url, timeout=30) as http:
        response = http.post(STORY, json={"inputs": {"topic": "caches"}}, headers=SSE)
    assert response.status_code == 200
    return parse_sse(response.text)


def test_a_prepared_factory_builds_on_the_loop_from_one_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parses: list[object] = []
    real = mock_factory.load_scenario

    def spy(path: Any) -> Any:
        parses.append(path)
        return real(path)

    monkeypatch.setattr(mock_factory, "load_scenario", spy)
    threads: list[object] = []

    def no_thread(*args: object, **kwargs: object) -> object:
        threads.append(args)
        raise AssertionError("a prepared factory was sent to a worker thread")

    monkeypatch.setattr(server_app.anyio.to_thread, "run_sync", no_thread)
    app = create_app(catalog(), async_adapter_factory("mock", scenario=SCENARIO))
    with serve_in_background(app) as url:
        runs = [_story(url) for _ in range(4)]
    assert len(parses) == 1
    assert threads == []
    # each request played the scenario from its first turn: the same events every time
    assert all(run == runs[0] for run in runs)
    assert runs[0][-1][0] == "envelope"


def test_any_other_factory_is_still_called_on_a_worker_thread() -> None:
    where: list[threading.Thread] = []
    scenario = mock_factory.load_scenario(SCENARIO)

    def build() -> AsyncScriptedRuntime:
        where.append(threading.current_thread())
        return AsyncScriptedRuntime(scenario)

    app = create_app(catalog(), build)
    with serve_in_background(app) as url:
        _story(url)
    assert len(where) == 1
    assert where[0] is not threading.main_thread()
    assert where[0].name != "runport-server"  # not the loop's thread either


RECEIPT = ExecutionReceipt.model_validate(
    {
        "adapter": {"id": "a", "version": "1"},
        "request_fingerprint": "0" * 64,
        "output_fingerprint": "1" * 64,
        "output": 'hé \u2028 "quoted" \\ </script>',
        "output_schema_valid": True,
        "text": 'hé \u2028 "quoted" \\ </script>',
    }
)
EVENTS: list[StreamEvent] = [
    Delta(text="plain"),
    Delta(text='new\nline, \u2028, "quotes", emoji \U0001f600, <b>'),
    ReasoningDelta(text="think\r\n"),
    ToolCallDelta(index=0, call_id="c1", name="f", arguments_fragment='{"a": '),
    Complete(receipt=RECEIPT),
    Failed(code="TQX_RUNTIME_TIMEOUT", message="late\nand long"),
]
EVENT: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)


@pytest.mark.parametrize("event", EVENTS, ids=lambda event: event.kind)
def test_an_event_frame_is_the_frame_the_union_encoder_gives(event: StreamEvent) -> None:
    expected = sse_frame(event.kind, EVENT.dump_json(event).decode())
    frame = event_frame(event)
    assert frame == expected
    assert frame.count(b"\n") == 3  # one event line, one data line, the blank line
