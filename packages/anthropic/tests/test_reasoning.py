"""Extended thinking over real HTTP on 127.0.0.1: ``thinking`` and ``redacted_thinking`` blocks
become reasoning (streamed as ``ReasoningDelta``, kept whole in ``receipt.reasoning`` with what
the API wants back), never the answer; and a tool run sends each turn's blocks back first,
signatures intact, as the API requires (docs/providers-anthropic-gemini.md)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from runport.anthropic import AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter
from runport.conformance.loopback import (
    Connection,
    Handler,
    fixed_reply,
    json_reply,
    seen,
    serving,
    stream_reply,
    trickle,
)
from runport.conformance.providers import (
    OBJECT_SCHEMA,
    WEATHER,
    Outcome,
    Provider,
    make_request,
    run_streamed,
)
from runport.contracts import (
    Delta,
    ErrorCode,
    ExecutionReceipt,
    Message,
    ReasoningDelta,
    ReasoningPart,
    ToolCallDelta,
    Usage,
)
from runport.ports import PortError

from .anthropic_wire import (
    Redacted,
    Text,
    Thinking,
    ToolUse,
    Turn,
    error_body,
    event,
    message_body,
    stream_events,
)

API_KEY = "sk-ant-api03-SECRET-reasoning"
PROVIDER = Provider(AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter, "claude-test", API_KEY)
adapter_for = PROVIDER.adapter_for

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"


def thought(text: str, signature: str = SIGNATURE) -> ReasoningPart:
    return ReasoningPart(
        text=text, provider_metadata={"anthropic": {"type": "thinking", "signature": signature}}
    )


def redacted(data: str = REDACTED) -> ReasoningPart:
    return ReasoningPart(
        provider_metadata={"anthropic": {"type": "redacted_thinking", "data": data}}
    )


def both_ways(client: httpx.Client, turn: Turn, **request: Any) -> tuple[Outcome, Any]:
    """The turn streamed and unstreamed: the streamed outcome (checked against the law as it
    arrives) and the unstreamed receipt, which must be equal (law 2)."""
    with serving(stream_reply(stream_events(turn)), json_reply(message_body(turn))) as server:
        adapter = adapter_for(server, client)
        outcome = run_streamed(adapter, make_request(**request))
        whole = adapter.execute(make_request(**request))
    assert outcome.receipt is not None, outcome.error
    assert whole == outcome.receipt
    return outcome, whole


def reasoning_texts(outcome: Outcome) -> list[str]:
    return [e.text for e in outcome.events if isinstance(e, ReasoningDelta)]


def test_reasoning_then_text(client: httpx.Client) -> None:
    turn = Turn([Thinking(["Let me ", "think."], SIGNATURE), Text(["Hello", "!"])])
    outcome, _ = both_ways(client, turn)
    receipt = outcome.receipt
    assert receipt is not None
    assert receipt.reasoning == [thought("Let me think.")]
    assert receipt.text == "Hello!"
    assert reasoning_texts(outcome) == ["Let me ", "think."]
    # the reasoning is progress before the answer, each piece as its frame arrives
    kinds = [type(e).__name__ for e in outcome.events[:-1]]
    assert kinds == ["ReasoningDelta", "ReasoningDelta", "Delta", "Delta"]
    assert receipt.usage == Usage(input_tokens=12, output_tokens=5)  # no reasoning count
    assert receipt.usage.reasoning_tokens is None


def test_reasoning_then_tool_calls(client: httpx.Client) -> None:
    turn = Turn(
        [
            Thinking(["I need ", "the weather."], SIGNATURE),
            ToolUse("toolu_01", "get_weather", ['{"city": ', '"Paris"}']),
        ],
        stop_reason="tool_use",
    )
    outcome, _ = both_ways(client, turn, tools=[WEATHER])
    receipt = outcome.receipt
    assert receipt is not None
    assert receipt.reasoning == [thought("I need the weather.")]
    assert receipt.text is None
    assert receipt.tool_calls is not None
    assert [c.arguments for c in receipt.tool_calls] == [{"city": "Paris"}]
    first_call = next(i for i, e in enumerate(outcome.events) if isinstance(e, ToolCallDelta))
    assert all(isinstance(e, ReasoningDelta) for e in outcome.events[:first_call])


def test_several_blocks_a_redacted_one_and_thinking_after_the_answer_began(
    client: httpx.Client,
) -> None:
    turn = Turn(
        [
            Thinking(["First."], "sig-1"),
            Redacted(REDACTED),
            Text(["Partly "]),
            Thinking(["Second ", "thought."], "sig-2"),  # interleaved thinking
            Text(["done."]),
        ]
    )
    outcome, _ = both_ways(client, turn)
    receipt = outcome.receipt
    assert receipt is not None
    assert receipt.reasoning == [
        thought("First.", "sig-1"),
        redacted(),
        thought("Second thought.", "sig-2"),
    ]
    assert receipt.text == "Partly done."
    assert reasoning_texts(outcome) == ["First.", "Second ", "thought."]


def test_a_signature_with_no_thinking_text_and_no_empty_reasoning_delta(
    client: httpx.Client,
) -> None:
    turn = Turn([Thinking([], "sig-only"), Thinking(["", "a", ""], "sig-a"), Text(["ok"])])
    outcome, _ = both_ways(client, turn)
    receipt = outcome.receipt
    assert receipt is not None
    assert receipt.reasoning == [thought("", "sig-only"), thought("a", "sig-a")]
    assert reasoning_texts(outcome) == ["a"]  # empty pieces are no events


def test_a_thinking_block_without_a_signature_is_kept_without_one(client: httpx.Client) -> None:
    outcome, _ = both_ways(client, Turn([Thinking(["hm"], ""), Text(["ok"])]))
    assert outcome.receipt is not None
    assert outcome.receipt.reasoning == [
        ReasoningPart(text="hm", provider_metadata={"anthropic": {"type": "thinking"}})
    ]


def test_a_start_that_carries_an_empty_signature_reads_the_same(client: httpx.Client) -> None:
    """Recorded streams open a thinking block with ``"signature": ""`` (the delta brings it)."""
    events = stream_events(Turn([Thinking(["Hi."], SIGNATURE), Text(["ok"])]))
    start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    }
    events[1] = event("content_block_start", start)
    with serving(stream_reply(events)) as server:
        outcome = run_streamed(adapter_for(server, client), make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.reasoning == [thought("Hi.")]


def test_the_async_twin_streams_the_same_reasoning(client: httpx.Client) -> None:
    turn = Turn([Thinking(["a", "b"]), Redacted(), Text(["ok"])])
    PROVIDER.check_the_async_twin(client, stream_reply(stream_events(turn)))


def test_a_redacted_block_without_data_is_an_invalid_response(client: httpx.Client) -> None:
    turn = Turn([Redacted(""), Text(["ok"])])
    with serving(stream_reply(stream_events(turn)), json_reply(message_body(turn))) as server:
        adapter = adapter_for(server, client)
        outcome = run_streamed(adapter, make_request())
        with pytest.raises(PortError) as raised:
            adapter.execute(make_request())
    for error in (outcome.error, raised.value):
        assert error is not None
        assert error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
        assert "redacted_thinking" in error.message


def test_thinking_for_a_block_after_a_later_one_began_is_invalid(client: httpx.Client) -> None:
    events = stream_events(Turn([Thinking(["one"]), Thinking(["two"])]))
    late = event(
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "late"},
        },
    )
    events.insert(-2, late)  # after block 1 began
    with serving(stream_reply(events)) as server:
        outcome = run_streamed(adapter_for(server, client), make_request())
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert reasoning_texts(outcome) == ["one", "two"]


def test_reasoning_counts_against_max_response_bytes(client: httpx.Client) -> None:
    delta = {"type": "thinking_delta", "thinking": "x" * 200}
    piece = event(
        "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    )
    opening = b"".join(stream_events(Turn([Thinking([])]), stop=False)[:2])
    PROVIDER.check_an_oversize_stream(client, trickle(opening, piece * 10, every=0.001))


def test_a_stream_cut_after_reasoning_is_truncated(client: httpx.Client) -> None:
    events = stream_events(Turn([Thinking(["deep ", "thought"]), Text(["ans"])]), stop=False)
    outcome = PROVIDER.streamed(client, stream_reply(events[:5]))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED
    assert reasoning_texts(outcome) == ["deep ", "thought"]


# --- asking for thinking --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "thinking"),
    [
        ({"reasoning": {"budget_tokens": 2000}}, {"type": "enabled", "budget_tokens": 2000}),
        ({"reasoning": {"effort": "low"}}, {"type": "enabled", "budget_tokens": 1024}),
        ({"reasoning": {}}, {"type": "enabled", "budget_tokens": 2048}),
        ({"reasoning": True}, {"type": "enabled", "budget_tokens": 2048}),
        ({"reasoning": False}, None),
        # the API's own shape passes as it is, and wins over ``reasoning``
        ({"thinking": {"type": "adaptive"}, "reasoning": {"effort": "low"}}, {"type": "adaptive"}),
    ],
)
def test_thinking_is_asked_for_through_runtime_policy(
    client: httpx.Client, policy: dict[str, Any], thinking: Any
) -> None:
    with serving(stream_reply(stream_events(Turn([Text(["ok"])])))) as server:
        run_streamed(adapter_for(server, client), make_request(runtime_policy=policy))
        body = seen(server).body
    assert body.get("thinking") == thinking


@pytest.mark.parametrize(
    "policy",
    [
        {"reasoning": {"effort": "extreme"}},
        {"reasoning": {"budget_tokens": "lots"}},
        {"reasoning": "yes"},
        {"reasoning": {"budget_tokens": 4096}},  # not below the default max_tokens (4096)
        {"reasoning": {"effort": "high"}, "max_tokens": 2000},
    ],
)
def test_a_thinking_request_that_cannot_be_sent_is_refused(
    client: httpx.Client, policy: dict[str, Any]
) -> None:
    with serving(stream_reply([])) as server, pytest.raises(PortError) as raised:
        adapter_for(server, client).execute(make_request(runtime_policy=policy))
    assert raised.value.code == ErrorCode.DATA_INVALID


def test_a_structured_answer_with_thinking_lets_the_model_choose_the_tool(
    client: httpx.Client,
) -> None:
    with serving(stream_reply(stream_events(Turn([Text(["{}"])])))) as server:
        request = make_request(OBJECT_SCHEMA, runtime_policy={"reasoning": {"effort": "low"}})
        run_streamed(adapter_for(server, client), request)
        body = seen(server).body
    assert body["tool_choice"] == {"type": "auto"}  # thinking refuses a forced tool


# --- sending it back ------------------------------------------------------------------------

THINKING_TOOL_TURN = Turn(
    [
        Thinking(["The user wants ", "the weather."], SIGNATURE),
        Redacted(REDACTED),
        Text(["Checking."]),
        ToolUse("toolu_01", "get_weather", ['{"city": "Paris"}']),
    ],
    stop_reason="tool_use",
)

API_400 = (
    "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. "
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
)


def enforcing(turns: list[Turn], blocks: list[dict[str, Any]]) -> list[Handler]:
    """A scripted upstream with thinking enabled: the first request gets ``turns[0]``; each
    later one must repeat the previous assistant turn with ``blocks`` first, byte for byte,
    or it gets the API's own 400."""

    def check(answer: Turn) -> Handler:
        def handler(connection: Connection, request: bytes) -> bool:
            body = json.loads(request.partition(b"\r\n\r\n")[2])
            assistant = [m for m in body["messages"] if m["role"] == "assistant"][-1]
            if assistant["content"][: len(blocks)] != blocks:
                return fixed_reply(
                    "400 Bad Request",
                    {"Content-Type": "application/json"},
                    error_body("invalid_request_error", API_400),
                )(connection, request)
            return stream_reply(stream_events(answer))(connection, request)

        return handler

    return [stream_reply(stream_events(turns[0])), *(check(turn) for turn in turns[1:])]


def next_turn(history: list[Message], receipt: ExecutionReceipt) -> list[Message]:
    """The history a tool run sends next: the assistant turn as the receipt gave it, its
    reasoning included, and each call's result."""
    calls = receipt.tool_calls or []
    return [
        *history,
        Message(
            role="assistant",
            content=receipt.text or "",
            tool_calls=calls,
            reasoning=receipt.reasoning,
        ),
        *(Message(role="tool", content="sunny", tool_call_id=c.call_id) for c in calls),
    ]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
def test_a_tool_run_with_thinking_sends_the_blocks_back_first_with_signatures(
    client: httpx.Client, stream: bool
) -> None:
    blocks = [
        {"type": "thinking", "thinking": "The user wants the weather.", "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED},
    ]
    handlers = enforcing([THINKING_TOOL_TURN, Turn([Text(["Sunny in Paris."])])], blocks)
    if not stream:
        handlers[0] = json_reply(message_body(THINKING_TOOL_TURN))
    policy = {"reasoning": {"budget_tokens": 1024}}
    with serving(*handlers) as server:
        adapter = adapter_for(server, client)
        history = [Message(role="user", content="Weather in Paris?")]
        request = make_request(messages=history, tools=[WEATHER], runtime_policy=policy)
        first = run_streamed(adapter, request).receipt if stream else adapter.execute(request)
        assert first is not None
        history = next_turn(history, first)
        outcome = run_streamed(
            adapter, make_request(messages=history, tools=[WEATHER], runtime_policy=policy)
        )
        second = seen(server).body
    assert outcome.error is None, outcome.error
    assert outcome.text == "Sunny in Paris."
    assert second["messages"][1] == {
        "role": "assistant",
        "content": [
            *blocks,
            {"type": "text", "text": "Checking."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
    }


def test_the_scripted_upstream_refuses_a_turn_that_lost_its_thinking(
    client: httpx.Client,
) -> None:
    """The enforcing upstream is no straw man: the assistant turn without its reasoning gets
    the API's 400, as a permanent error carrying the API's message."""
    blocks = [{"type": "thinking", "thinking": "x", "signature": SIGNATURE}]
    handlers = enforcing([Turn([Text(["?"])]), Turn([Text(["no"])])], blocks)
    with serving(*handlers) as server:
        adapter = adapter_for(server, client)
        adapter.execute(make_request())
        history = [
            Message(role="user", content="hi"),
            Message(role="assistant", content="Checking."),
            Message(role="user", content="go on"),
        ]
        outcome = run_streamed(adapter, make_request(messages=history))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_PERMANENT
    assert "must start with a thinking block" in outcome.error.message


def test_only_this_apis_signed_blocks_go_back(client: httpx.Client) -> None:
    reasoning = [
        ReasoningPart(text="from elsewhere", provider_metadata={"openai": {"field": "reasoning"}}),
        ReasoningPart(text="no metadata"),
        ReasoningPart(text="unsigned", provider_metadata={"anthropic": {"type": "thinking"}}),
        ReasoningPart(provider_metadata={"anthropic": {"type": "redacted_thinking"}}),
        thought("kept", "sig-k"),
    ]
    with serving(stream_reply(stream_events(Turn([Text(["ok"])])))) as server:
        history = [
            Message(role="user", content="hi"),
            Message(role="assistant", content="Hello.", reasoning=reasoning),
            Message(role="user", content="again"),
        ]
        run_streamed(adapter_for(server, client), make_request(messages=history))
        body = seen(server).body
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "kept", "signature": "sig-k"},
        {"type": "text", "text": "Hello."},
    ]


def test_reasoning_never_reaches_the_answer_events(client: httpx.Client) -> None:
    outcome, _ = both_ways(client, THINKING_TOOL_TURN, tools=[WEATHER])
    assert outcome.receipt is not None
    answer = "".join(e.text for e in outcome.events if isinstance(e, Delta))
    assert answer == outcome.receipt.text == "Checking."
    assert outcome.receipt.output == "Checking."
