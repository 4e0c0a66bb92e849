"""For the same bytes, the receipt agrees with what Cohere's official SDK (``cohere``'s
``ClientV2``) reads — text, thinking blocks, the tool plan, tool calls, the finish reason and
usage — across random turns and random chunkings of the body.

The SDK is a test-only dependency (the tox env and the root dev group); both read the same
bytes from the same loopback server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cohere import ClientV2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.cohere import AsyncCohereChatAdapter, CohereChatAdapter
from runport.conformance.loopback import Playback
from runport.conformance.providers import Provider

API_KEY = "co-differential-key"
MODEL = "command-a-03-2025"
PROVIDER = Provider(CohereChatAdapter, AsyncCohereChatAdapter, MODEL, API_KEY)

_pieces = st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=3)
_arguments = st.dictionaries(
    st.sampled_from(["city", "days", "ß"]), st.one_of(st.integers(-5, 500), st.text(max_size=6))
)
_block = st.one_of(
    st.tuples(st.just("text"), _pieces),
    st.tuples(st.just("thinking"), _pieces),
    st.tuples(st.just("call"), st.tuples(st.sampled_from(["weather", "lookup"]), _arguments)),
)
turns = st.fixed_dictionaries(
    {
        "plan": st.lists(st.text(min_size=1, max_size=10), max_size=2),
        "blocks": st.lists(_block, max_size=4),
        "finish": st.sampled_from(["COMPLETE", "MAX_TOKENS", "TOOL_CALL", "STOP_SEQUENCE"]),
        "input": st.integers(0, 10**6),
        "output": st.integers(0, 10**5),
        "cached": st.one_of(st.none(), st.integers(0, 100)),
    }
)


def event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def message(index: int | None = None, **fields: Any) -> dict[str, Any]:
    at = {} if index is None else {"index": index}
    return {**at, "delta": {"message": fields}}


def usage(turn: dict[str, Any]) -> dict[str, Any]:
    counts = {"input_tokens": turn["input"], "output_tokens": turn["output"]}
    wire: dict[str, Any] = {"billed_units": counts, "tokens": counts}
    if turn["cached"] is not None:
        wire["cached_tokens"] = min(turn["cached"], turn["input"])
    return wire


def stream(turn: dict[str, Any]) -> bytes:
    out = [event({"type": "message-start", "id": "m", **message(role="assistant")})]
    out += [event({"type": "tool-plan-delta", **message(tool_plan=p)}) for p in turn["plan"]]
    content = calls = 0
    for kind, value in turn["blocks"]:
        if kind == "call":
            name, arguments = value
            call = {"id": f"{name}_{calls}", "type": "function"}
            call["function"] = {"name": name, "arguments": ""}
            out.append(event({"type": "tool-call-start", **message(calls, tool_calls=call)}))
            text = json.dumps(arguments)
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                function = {"function": {"arguments": piece}}
                out.append(
                    event({"type": "tool-call-delta", **message(calls, tool_calls=function)})
                )
            out.append(event({"type": "tool-call-end", "index": calls}))
            calls += 1
            continue
        start = {"content": {"type": kind, kind: ""}}
        out.append(event({"type": "content-start", **message(content, **start)}))
        for piece in value:
            piece_of = {"content": {kind: piece}}
            out.append(event({"type": "content-delta", **message(content, **piece_of)}))
        out.append(event({"type": "content-end", "index": content}))
        content += 1
    end = {"finish_reason": turn["finish"], "usage": usage(turn)}
    out.append(event({"type": "message-end", "delta": end}))
    return b"".join(out)


@pytest.fixture(scope="module")
def sdk(playback: Playback) -> Iterator[ClientV2]:
    with httpx.Client() as http:
        yield ClientV2(api_key=API_KEY, base_url=playback.base_url, httpx_client=http)


def sdk_view(events: list[Any]) -> dict[str, Any]:
    """What the SDK's events say: text and thinking per content block, the plan, the calls
    (their arguments joined, then parsed), the finish and the usage."""
    text: list[str] = []
    thinking: list[str] = []
    plan: list[str] = []
    calls: list[list[Any]] = []
    finish = counts = None
    for e in events:
        if e.type == "content-start" and e.delta.message.content.type == "thinking":
            thinking.append("")
        elif e.type == "content-delta":
            piece = e.delta.message.content
            if piece.text is not None:
                text.append(piece.text)
            else:
                thinking[-1] += piece.thinking
        elif e.type == "tool-plan-delta":
            plan.append(e.delta.message.tool_plan)
        elif e.type == "tool-call-start":
            call = e.delta.message.tool_calls
            calls.append([call.id, call.function.name, call.function.arguments or ""])
        elif e.type == "tool-call-delta":
            calls[-1][2] += e.delta.message.tool_calls.function.arguments
        elif e.type == "message-end":
            finish = e.delta.finish_reason
            used = e.delta.usage
            cached = int(used.cached_tokens or 0) or None  # a receipt leaves out 0 cached
            counts = (int(used.tokens.input_tokens), int(used.tokens.output_tokens), cached)
    return {
        "text": "".join(text) or None,
        "reasoning": (["".join(plan)] if plan else []) + thinking,
        "calls": [(i, n, json.loads(a)) for i, n, a in calls],
        "finish": finish,
        "usage": counts,
    }


def receipt_view(receipt: Any) -> dict[str, Any]:
    used = receipt.usage
    return {
        "text": receipt.text,
        "reasoning": [part.text for part in receipt.reasoning or []],
        "calls": [(c.call_id, c.name, c.arguments) for c in receipt.tool_calls or []],
        "finish": receipt.finish_reason,
        "usage": (used.input_tokens, used.output_tokens, used.cache_read_tokens),
    }


@settings(
    max_examples=settings.default.max_examples // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turn=turns, cuts=st.lists(st.integers(0, 3000), max_size=12))
def test_the_streamed_receipt_agrees_with_the_sdk(
    playback: Playback, sdk: ClientV2, turn: dict[str, Any], cuts: list[int]
) -> None:
    receipt = PROVIDER.streamed_receipt(playback, stream(turn), cuts)
    said = list(sdk.chat_stream(model=MODEL, messages=[{"role": "user", "content": "hi"}]))
    assert receipt_view(receipt) == sdk_view(said)


def whole(turn: dict[str, Any]) -> dict[str, Any]:
    """The turn as ``/v2/chat`` answers it unstreamed."""
    content: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for kind, value in turn["blocks"]:
        if kind == "call":
            name, arguments = value
            function = {"name": name, "arguments": json.dumps(arguments)}
            calls.append({"id": f"{name}_{len(calls)}", "type": "function", "function": function})
        else:
            content.append({"type": kind, kind: "".join(value)})
    said: dict[str, Any] = {"role": "assistant", "content": content}
    if turn["plan"]:
        said["tool_plan"] = "".join(turn["plan"])
    if calls:
        said["tool_calls"] = calls
    return {"id": "m", "message": said, "finish_reason": turn["finish"], "usage": usage(turn)}


def sdk_whole_view(response: Any) -> dict[str, Any]:
    said = response.message
    items = said.content or []
    used = response.usage
    return {
        "text": "".join(i.text for i in items if i.type == "text") or None,
        "reasoning": ([said.tool_plan] if said.tool_plan else [])
        + [i.thinking for i in items if i.type == "thinking"],
        "calls": [
            (c.id, c.function.name, json.loads(c.function.arguments)) for c in said.tool_calls or []
        ],
        "finish": response.finish_reason,
        "usage": (
            int(used.tokens.input_tokens),
            int(used.tokens.output_tokens),
            int(used.cached_tokens or 0) or None,
        ),
    }


@settings(
    max_examples=settings.default.max_examples // 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turn=turns)
def test_the_unstreamed_receipt_agrees_with_the_sdk(
    playback: Playback, sdk: ClientV2, turn: dict[str, Any]
) -> None:
    receipt = PROVIDER.unstreamed_receipt(playback, whole(turn))
    said = sdk.chat(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert receipt_view(receipt) == sdk_whole_view(said)
