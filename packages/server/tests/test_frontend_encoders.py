"""The frontend encoders on their own: one chunk per run event, the run's ending in each
protocol's terms, sealed reasoning, and AG-UI's patches (the protocols' own clients read the
same streams in the frontend env: test_frontend_clients.py)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.application import RunError, RunPartial, SnapshotPace
from runport.contracts import (
    Complete,
    Delta,
    ErrorCode,
    ReasoningPart,
    RunEvent,
    SubRunEvent,
    ToolCallDelta,
    ToolProgress,
)
from runport.server import agui_stream, ui_message_stream
from runport.server._frontends.agui._stream import json_patch
from runport.server._reasoning_seal import SealBroken, sealed_reasoning, unsealed_reasoning

from .frontend_runs import chat_run_events, replay

Encoder = Callable[[AsyncIterator[RunEvent]], AsyncIterator[bytes]]
UI: Encoder = ui_message_stream


def agui(events: AsyncIterator[RunEvent]) -> AsyncIterator[bytes]:
    return agui_stream(events, thread_id="t", run_id="r")


def encoded(
    encoder: Encoder, events: list[RunEvent], error: BaseException | None = None
) -> list[bytes]:
    async def collect() -> list[bytes]:
        return [chunk async for chunk in encoder(replay(events, error))]

    return asyncio.run(collect())


def payloads(chunk: bytes) -> list[Any]:
    frames = [frame for frame in chunk.decode().split("\n\n") if frame]
    assert all(frame.startswith("data: ") and "\n" not in frame for frame in frames)
    return [frame.removeprefix("data: ") for frame in frames]


@pytest.mark.parametrize("encoder", [UI, agui], ids=["ui", "agui"])
def test_each_run_event_leaves_as_one_chunk_of_whole_frames(encoder: Encoder) -> None:
    events = chat_run_events(snapshots=True)
    chunks = encoded(encoder, events)
    # the opening, one per event that sends anything, the ending: a snapshot SnapshotPace
    # holds back sends nothing, and goes out with a later event's chunk
    pace = SnapshotPace()
    sending = [event for event in events if pace(event)]
    assert len(chunks) == len(sending) + 2
    for chunk in chunks:
        for payload in payloads(chunk):
            if payload != "[DONE]":
                assert isinstance(json.loads(payload), dict)


def ui_types(chunks: list[bytes]) -> list[str]:
    return [json.loads(p)["type"] for chunk in chunks for p in payloads(chunk) if p != "[DONE]"]


def test_a_caller_stop_ends_the_ui_stream_with_abort_and_a_failure_with_its_code() -> None:
    events = chat_run_events()[:4]
    stopped = RunError("model", ErrorCode.CALLER_STOPPED, RunPartial(), "stopped")
    ending = ui_types(encoded(UI, events, stopped))[-2:]
    assert ending == ["finish-step", "abort"]
    failed = RunError("tool", ErrorCode.TOOL_FAILED, RunPartial(), "get_weather raised")
    last = encoded(UI, events, failed)[-1]
    sent = [json.loads(p) for p in payloads(last) if p != "[DONE]"]
    assert sent[-2] == {"type": "error", "errorText": "TQX_TOOL_FAILED: get_weather raised"}
    assert sent[-1] == {"type": "finish", "finishReason": "error"}
    assert payloads(last)[-1] == "[DONE]"


def test_ag_ui_ends_with_run_error_or_a_cancelled_run_finished() -> None:
    events = chat_run_events()[:4]
    failed = RunError("model", ErrorCode.RUNTIME_UNAVAILABLE, RunPartial(), "gone")
    last = json.loads(payloads(encoded(agui, events, failed)[-1])[-1])
    assert last == {"type": "RUN_ERROR", "code": "TQX_RUNTIME_UNAVAILABLE", "message": "gone"}
    stopped = RunError("model", ErrorCode.CALLER_STOPPED, RunPartial(), "stopped")
    last = json.loads(payloads(encoded(agui, events, stopped)[-1])[-1])
    assert last["type"] == "RUN_FINISHED"
    assert last["outcome"] == {"type": "cancelled"}


def test_every_text_reasoning_and_argument_piece_arrives_unchanged() -> None:
    events = chat_run_events()
    sent = [
        json.loads(p) for chunk in encoded(UI, events) for p in payloads(chunk) if p != "[DONE]"
    ]
    text = "".join(c["delta"] for c in sent if c["type"] == "text-delta")
    reasoning = "".join(c["delta"] for c in sent if c["type"] == "reasoning-delta")
    arguments = "".join(c["inputTextDelta"] for c in sent if c["type"] == "tool-input-delta")
    assert text == 'Let me check the weather.{"coat": "light jacket"}'
    assert reasoning == "The city decides the coat; ask for the weather first.Mild and dry: "
    assert arguments == '{"city": "Delft"}'


PARTS = [ReasoningPart(text="a", provider_metadata={"anthropic": {"signature": "s1"}})]


HERE = {"contract_id": "demo.forecast", "chat_id": "chat-1"}


def test_sealed_reasoning_comes_back_only_unchanged_and_under_the_same_key() -> None:
    metadata = sealed_reasoning(PARTS, b"key", **HERE)
    assert unsealed_reasoning(metadata, b"key", **HERE) == PARTS
    with pytest.raises(SealBroken):
        unsealed_reasoning(metadata, b"another key", **HERE)
    edited = copy.deepcopy(metadata)
    edited["runport"]["reasoning"][0]["text"] = "b"  # type: ignore[index]
    with pytest.raises(SealBroken):
        unsealed_reasoning(edited, b"key", **HERE)
    unsealed = sealed_reasoning(PARTS, None, **HERE)
    with pytest.raises(SealBroken):
        unsealed_reasoning(unsealed, b"key", **HERE)
    assert unsealed_reasoning({"anthropic": {"signature": "x"}}, b"key", **HERE) is None


@pytest.mark.parametrize(
    "elsewhere",
    [
        {"contract_id": "demo.story", "chat_id": "chat-1"},
        {"contract_id": "demo.forecast", "chat_id": "chat-2"},
        # the pair is sealed as one object: no split of "ab" + "c" reads as "a" + "bc"
        {"contract_id": "demo.forecastchat-1", "chat_id": ""},
    ],
)
def test_a_seal_holds_only_in_the_contract_and_chat_it_was_minted_for(
    elsewhere: dict[str, str],
) -> None:
    metadata = sealed_reasoning(PARTS, b"key", **HERE)
    with pytest.raises(SealBroken, match="seal does not match"):
        unsealed_reasoning(metadata, b"key", **elsewhere)


def _apply(document: Any, patch: list[dict[str, Any]]) -> Any:
    """RFC 6902 ``add`` and ``replace``, the two operations json_patch writes."""
    root = {"": copy.deepcopy(document)}
    for op in patch:
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in op["path"].split("/")[1:]]
        parent: Any = root
        key: Any = ""
        for token in tokens:
            parent = parent[key]
            key = int(token) if isinstance(parent, list) else token
        if isinstance(parent, list) and op["op"] == "add" and key == len(parent):
            parent.append(op["value"])
        else:
            parent[key] = op["value"]
    return root[""]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet="a/~b", max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=settings.default.max_examples, deadline=None)
@given(json_values, json_values)
def test_a_patch_turns_the_previous_state_into_the_next(before: Any, after: Any) -> None:
    assert _apply(before, json_patch(before, after)) == after


def test_a_shared_subtree_is_skipped_without_being_read() -> None:
    shared = {"big": list(range(1000))}
    before = {"done": shared, "items": ["a"]}
    after = {"done": shared, "items": ["a", "b"]}
    assert json_patch(before, after) == [{"op": "add", "path": "/items/1", "value": "b"}]


def _with_progress() -> tuple[list[RunEvent], str]:
    """The chat's run with a tool's progress and a sub-run's event after its first turn."""
    events = chat_run_events()
    first = next(i for i, event in enumerate(events) if isinstance(event, Complete))
    call_id = next(e.call_id for e in events[:first] if isinstance(e, ToolCallDelta))
    extra: list[RunEvent] = [
        ToolProgress(call_id=call_id, data={"stations_read": 3}),
        SubRunEvent(call_id=call_id, event=Delta(text="asking the station")),
    ]
    return [*events[: first + 1], *extra, *events[first + 1 :]], call_id


def test_tool_progress_is_a_preliminary_output_and_a_sub_run_a_transient_data_part() -> None:
    events, call_id = _with_progress()
    sent = [json.loads(p) for c in encoded(UI, events) for p in payloads(c) if p != "[DONE]"]
    assert {
        "type": "tool-output-available",
        "toolCallId": call_id,
        "output": {"stations_read": 3},
        "preliminary": True,
    } in sent
    assert {
        "type": "data-runport-subrun",
        "data": {"call_id": call_id, "event": {"kind": "Delta", "text": "asking the station"}},
        "transient": True,
    } in sent


def test_ag_ui_sends_tool_progress_and_sub_runs_as_custom_events() -> None:
    events, call_id = _with_progress()
    sent = [json.loads(p) for c in encoded(agui, events) for p in payloads(c)]
    custom = [event for event in sent if event["type"] == "CUSTOM"]
    assert {
        "type": "CUSTOM",
        "name": "runport.tool_progress",
        "value": {"call_id": call_id, "data": {"stations_read": 3}},
    } in custom
    assert {
        "type": "CUSTOM",
        "name": "runport.subrun",
        "value": {"call_id": call_id, "event": {"kind": "Delta", "text": "asking the station"}},
    } in custom
