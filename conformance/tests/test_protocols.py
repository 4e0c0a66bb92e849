"""The ``anthropic-messages`` and ``gemini`` protocols: each case played as the wire dictates
(docs/conformance.md) keeps what the turn means, and its rendering says exactly that — read
back here by a small reader of each wire, written for this test alone."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance import CASES, Case, ScriptedUpstream, WireContext, WireRequest
from runport.conformance import PROTOCOLS as BUILT_IN
from runport.conformance._cases import CASES_BY_NAME, Call, Text
from runport.conformance._responses import Response, body_response, stream_response
from runport.conformance._rewrites import json_answer
from runport.conformance._strategies import generated_case
from runport.contracts import ToolCallDelta

PROTOCOLS = ("anthropic-messages", "gemini")
MARKER = "RUNPORT-BODY-0123456789abcdef"


def played_as(case: Case, protocol: str) -> Case:
    return BUILT_IN[protocol].played(case)


def playable(case: Case, protocol: str) -> None:
    """Skip ``case`` where ``protocol``'s wire cannot say it (the suite never plays it there)."""
    if not case.requires <= BUILT_IN[protocol].features:
        pytest.skip(f"{protocol} cannot say {case.name}: the suite never plays it there")


def render(
    protocol: str, case: Case, *, stream: bool, model: str, marker: str, request: Any = None
) -> Response:
    """``case`` as a ``protocol`` server answers a streamed or unstreamed request."""
    wire = BUILT_IN[protocol]
    sent = None if request is None else WireRequest("POST", "/", {}, {}, b"", request)
    answer = stream_response if stream else body_response
    return answer(wire, wire.played(case), WireContext(model, marker, sent))


def meaning(case: Case) -> dict[str, Any]:
    """What a turn says, whatever its fragmentation: text, calls in first-seen order (with the
    upstream's ids; a missing one is ``call_<n>``, counted in the order played), usage (but
    cache writes, which only some wires report)."""
    receipt = case.expected_receipt() if not case.fails else {}
    usage = receipt.get("usage")
    if usage is not None:
        usage = {key: count for key, count in usage.items() if key != "cache_write_tokens"}
    sent = {step.call_id for step in case.steps if isinstance(step, Call)}
    calls = [
        {**call, "call_id": call["call_id"] if call["call_id"] in sent else None}
        for call in receipt.get("tool_calls", [])
    ]
    first_seen = [e.index for e in case.progress() if isinstance(e, ToolCallDelta)]
    order = list(dict.fromkeys(first_seen))
    text = "".join(step.text for step in case.steps if isinstance(step, Text))
    return {
        # A JSON answer means its value: Anthropic's is played without the spacing.
        "text": json.loads(text) if json_answer(case) else text,
        "calls": [calls[index] for index in order],
        "usage": usage,
        "fault": case.fault,
    }


def call_events(case: Case) -> dict[int, list[str]]:
    fragments: dict[int, list[str]] = {}
    for event in case.progress():
        if isinstance(event, ToolCallDelta):
            fragments.setdefault(event.index, []).append(event.arguments_fragment)
    return fragments


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_played_case_means_the_same_and_plays_as_itself(protocol: str, case: Case) -> None:
    playable(case, protocol)
    played = played_as(case, protocol)
    assert played_as(played, protocol) == played
    assert meaning(played) == meaning(case)


@settings(deadline=None, derandomize=True, database=None)
@given(data=st.data(), protocol=st.sampled_from(PROTOCOLS))
def test_generated_turns_keep_their_meaning(data: st.DataObject, protocol: str) -> None:
    case = data.draw(generated_case(tools=True))
    played = played_as(case, protocol)
    assert played_as(played, protocol) == played
    assert meaning(played) == meaning(case)
    indices = [e.index for e in played.progress() if isinstance(e, ToolCallDelta)]
    assert indices == sorted(indices), "calls are contiguous and numbered as first seen"
    for fragments in call_events(played).values():
        assert fragments[0] == ""
        if protocol == "gemini":
            assert len(fragments) == 2


def test_finish_reasons_are_the_protocols_own() -> None:
    tools = next(case for case in CASES if case.name == "one_tool_call")
    text = next(case for case in CASES if case.name == "plain_text")
    assert played_as(tools, "anthropic-messages").finish_reason == "tool_use"
    assert played_as(text, "anthropic-messages").finish_reason == "end_turn"
    assert played_as(tools, "gemini").finish_reason == "STOP"
    assert played_as(text, "openai-chat") is text


def test_each_protocol_says_how_a_turn_ended_in_its_own_words() -> None:
    """The turn-end cases keep runport's word for the end (``finish``) beside the wire's."""
    ends = {name: CASES_BY_NAME[name] for name in ("cut_mid_answer", "refused", "paused")}
    words = {
        "anthropic-messages": ("max_tokens", "refusal", "pause_turn"),
        "gemini": ("MAX_TOKENS", "SAFETY", None),
        "openai-chat": ("length", "content_filter", None),
        "openai-responses": ("length", "content_filter", None),
        "scenario": ("length", "content_filter", "pause"),
    }
    for protocol, said in words.items():
        wire = BUILT_IN[protocol]
        for (name, case), word in zip(ends.items(), said, strict=True):
            if word is None:
                assert not case.requires <= wire.features, (protocol, name)
                continue
            played = wire.played(case)
            assert (played.finish_reason, played.expected_finish) == (
                word,
                {"cut_mid_answer": "length", "refused": "content_filter", "paused": "pause"}[name],
            )
    tools = CASES_BY_NAME["one_tool_call"]
    assert BUILT_IN["gemini"].played(tools).expected_finish == "tool_calls"


def test_cache_writes_are_played_only_where_the_wire_reports_them() -> None:
    case = CASES_BY_NAME["cache_usage"]
    for protocol, wire in BUILT_IN.items():
        counts = wire.played(case).expected_receipt()["usage"]
        assert counts["cache_read_tokens"] == 1024
        assert ("cache_write_tokens" in counts) == ("cache_writes" in wire.features), protocol


# -- reading the renderings back -----------------------------------------------------------


def sse_frames(response: Response) -> list[tuple[str, Any]]:
    """(event name, JSON data or the raw text when it is not JSON) per SSE frame."""
    body = b"".join(frame.data for frame in response.frames).decode()
    frames = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in fields:
            try:
                frames.append((fields.get("event", "message"), json.loads(fields["data"])))
            except ValueError:
                frames.append((fields.get("event", "message"), fields["data"]))
    return frames


def completes(protocol: str, frames: list[tuple[str, Any]]) -> bool:
    if protocol == "anthropic-messages":
        return any(isinstance(d, dict) and d.get("type") == "message_stop" for _, d in frames)
    return any(
        isinstance(d, dict) and "finishReason" in (d.get("candidates") or [{}])[0]
        for _, d in frames
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_stream_carries_the_marker_exactly_when_the_turn_completes(
    protocol: str, case: Case
) -> None:
    playable(case, protocol)
    played = played_as(case, protocol)
    response = render(protocol, played, stream=True, model="m", marker=MARKER)
    fault = case.fault
    if fault is not None and fault.kind == "status":
        assert response.status == fault.status
        body = json.loads(response.frames[0].data)
        if protocol == "gemini":
            assert body["error"]["code"] == fault.status
        else:
            assert body["type"] == "error"
        retry = dict(response.headers).get("Retry-After")
        want = None if fault.retry_after_ms is None else str(fault.retry_after_ms // 1000)
        assert retry == want
        return
    frames = sse_frames(response)
    assert completes(protocol, frames) == (fault is None or fault.kind == "oversize")
    assert response.progress == len(played.progress())
    if fault is not None and fault.kind == "error_frame":
        event, data = frames[-1]
        if protocol == "anthropic-messages":
            assert event == "error"
            assert data["type"] == "error"
            assert set(data["error"]) == {"type", "message"}
        else:
            assert set(data["error"]) == {"code", "message", "status"}
    if fault is not None and fault.kind == "garbage":
        assert isinstance(frames[-1][1], str)


def anthropic_calls(frames: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    calls: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    for _, data in frames:
        if data["type"] == "content_block_start" and data["content_block"]["type"] == "tool_use":
            names[data["index"]] = data["content_block"]["name"]
            calls[data["index"]] = []
        elif data["type"] == "content_block_delta" and data["index"] in calls:
            calls[data["index"]].append(data["delta"]["partial_json"])
    return [(names[i], "".join(calls[i])) for i in sorted(calls)]


def gemini_calls(frames: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    found = []
    for _, data in frames:
        for part in data["candidates"][0]["content"]["parts"]:
            if "functionCall" in part:
                call = part["functionCall"]
                found.append((call["name"], json.dumps(call["args"], separators=(",", ":"))))
    return found


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_calls_are_rendered_whole_or_in_blocks(protocol: str) -> None:
    case = next(case for case in CASES if case.name == "three_tool_calls")
    frames = sse_frames(render(protocol, case, stream=True, model="m", marker=MARKER))
    read = anthropic_calls(frames) if protocol == "anthropic-messages" else gemini_calls(frames)
    compact = [(name, json.dumps(json.loads(args), separators=(",", ":"))) for name, args in read]
    assert compact == [
        ("get_time", '{"zone":"UTC"}'),
        ("get_weather", '{"city":"Paris"}'),
        ("get_weather", '{"city":"Oslo"}'),
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_unstreamed_body_says_what_the_stream_says(protocol: str) -> None:
    case = next(case for case in CASES if case.name == "one_tool_call")
    body = json.loads(render(protocol, case, stream=False, model="m", marker=MARKER).frames[0].data)
    if protocol == "anthropic-messages":
        assert [block["type"] for block in body["content"]] == ["text", "tool_use"]
        assert body["content"][1]["input"] == {"city": "Paris"}
        assert body["stop_reason"] == "tool_use"
    else:
        parts = body["candidates"][0]["content"]["parts"]
        assert parts == [
            {"text": "Checking."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_w1"}},
        ]


@pytest.mark.parametrize(
    ("protocol", "path", "status"),
    [
        ("anthropic-messages", "/v1/chat/completions", 404),
        ("gemini", "/v1beta/models/m:streamGenerateContent", 404),
        ("gemini", "/v1beta/models/m:streamGenerateContent?alt=sse", 200),
        ("gemini", "/v1beta/models/m:generateContent", 200),
        ("anthropic-messages", "/v1/messages", 200),
    ],
)
def test_the_upstream_answers_only_its_protocols_paths(
    protocol: str, path: str, status: int
) -> None:
    plain = next(case for case in CASES if case.name == "plain_text")
    upstream = ScriptedUpstream([plain], protocol=protocol)
    try:
        response = httpx.post(upstream.base_url + path, json={"stream": True}, timeout=5)
    finally:
        upstream.close()
    assert response.status_code == status
    if status == 200:
        assert "Hello" in response.text or "Hel" in response.text


def test_an_unknown_protocol_is_refused() -> None:
    from runport.conformance import ConformanceUsageError

    with pytest.raises(ConformanceUsageError, match="speaks 'grpc'"):
        ScriptedUpstream([], protocol="grpc")


def test_a_call_without_arguments_gets_an_empty_object() -> None:
    case = Case("bare", "a call announced and never given arguments", (Call(0, name="f"),))
    for protocol in PROTOCOLS:
        assert call_events(played_as(case, protocol)) == {0: ["", "{}"]}


FORCED = {"tool_choice": {"type": "tool", "name": "runport_answer"}}


def test_a_forced_tool_gets_the_json_answer_as_its_input_spaced_only_on_the_stream() -> None:
    case = next(case for case in CASES if case.name == "structured_json")
    spaced = "".join(step.text for step in case.steps if isinstance(step, Text))
    played = played_as(case, "anthropic-messages")
    unspaced = "".join(step.text for step in played.steps if isinstance(step, Text))
    assert unspaced == '{"city":"Paris","temperature_c":21.5}'
    streamed = render(
        "anthropic-messages", played, stream=True, model="m", marker=MARKER, request=FORCED
    )
    frames = sse_frames(streamed)
    starts = [d["content_block"] for _, d in frames if d.get("type") == "content_block_start"]
    assert [(block["type"], block["name"]) for block in starts] == [("tool_use", "runport_answer")]
    fragments = [
        d["delta"]["partial_json"] for _, d in frames if d.get("type") == "content_block_delta"
    ]
    assert "".join(fragments) == spaced
    owed = [frame.owes for frame in streamed.frames]
    assert owed[-1] == len([step for step in played.steps if isinstance(step, Text) and step.text])
    whole = render(
        "anthropic-messages", played, stream=False, model="m", marker=MARKER, request=FORCED
    )
    body = whole.frames[0].data.decode()
    assert '"input":' + unspaced in body
    assert json.loads(body)["content"] == [
        {
            "type": "tool_use",
            "id": "toolu_runport_conformance_answer",
            "name": "runport_answer",
            "input": json.loads(spaced),
        }
    ]
    # Not forced: the unspaced answer as a text block.
    plain = json.loads(
        render("anthropic-messages", played, stream=False, model="m", marker=MARKER).frames[0].data
    )
    assert plain["content"] == [{"type": "text", "text": unspaced}]
