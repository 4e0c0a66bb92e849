"""Thoughts and Gemini 3's streamed function-call arguments over real HTTP on 127.0.0.1:
``thought: true`` parts become reasoning (streamed as ``ReasoningDelta``, kept in
``receipt.reasoning`` with their ``thoughtSignature``), never the answer, and go back as thought
parts; ``partialArgs`` pieces are fragments of one call (docs/providers-anthropic-gemini.md)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import json_reply, seen, serving, stream_reply, trickle
from runport.conformance.providers import WEATHER, Outcome, Provider, make_request, run_streamed
from runport.contracts import (
    Delta,
    ErrorCode,
    Message,
    ReasoningDelta,
    ReasoningPart,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter
from runport.ports import PortError

from .gemini_wire import Turn, call, frame, response_body, stream_chunks, text, thought

API_KEY = "AIzaSyTEST-SECRET-reasoning-0123"
PROVIDER = Provider(GeminiAdapter, AsyncGeminiAdapter, "gemini-test", API_KEY)
adapter_for = PROVIDER.adapter_for

SIGNATURE = "CtgBAdHtim9+Pq7ZL0KZkYqUWlHHdBDSpVt0nuAgvb8xxf3Ei0BtAnNaZ"


def signed(value: str, signature: str = SIGNATURE) -> dict[str, Any]:
    return {**thought(value), "thoughtSignature": signature}


def part(value: str, signature: str | None = SIGNATURE) -> ReasoningPart:
    metadata = {"gemini": {"thoughtSignature": signature}} if signature else None
    return ReasoningPart(text=value, provider_metadata=metadata)


def both_ways(client: httpx.Client, turn: Turn, **request: Any) -> Outcome:
    """The turn streamed and unstreamed, whose receipts must be equal (law 2)."""
    with serving(stream_reply(stream_chunks(turn)), json_reply(response_body(turn))) as server:
        adapter = adapter_for(server, client)
        outcome = run_streamed(adapter, make_request(**request))
        whole = adapter.execute(make_request(**request))
    assert outcome.receipt is not None, outcome.error
    assert whole == outcome.receipt
    return outcome


def reasoning_texts(outcome: Outcome) -> list[str]:
    return [e.text for e in outcome.events if isinstance(e, ReasoningDelta)]


def test_reasoning_then_text(client: httpx.Client) -> None:
    turn = Turn(
        [[thought("Let me ")], [signed("think.")], [text("Hello!")]],
        candidates_tokens=4,
        thoughts_tokens=25,
    )
    outcome = both_ways(client, turn)
    receipt = outcome.receipt
    assert receipt is not None
    assert receipt.reasoning == [part("Let me think.")]
    assert receipt.text == "Hello!"
    assert reasoning_texts(outcome) == ["Let me ", "think."]
    kinds = [type(e).__name__ for e in outcome.events[:-1]]
    assert kinds == ["ReasoningDelta", "ReasoningDelta", "Delta"]
    # candidatesTokenCount leaves the thoughts out; output is what is billed (both)
    assert receipt.usage == Usage(input_tokens=9, output_tokens=29, reasoning_tokens=25)


def test_reasoning_then_tool_calls(client: httpx.Client) -> None:
    fc = {**call("get_weather", {"city": "Paris"}, call_id="fc-1"), "thoughtSignature": "c2ln"}
    turn = Turn([[thought("Need the weather.")], [fc]])
    outcome = both_ways(client, turn, tools=[WEATHER])
    receipt = outcome.receipt
    assert receipt is not None
    assert receipt.reasoning == [part("Need the weather.", None)]
    assert receipt.text is None
    assert receipt.tool_calls == [
        ToolCall(
            call_id="fc-1",
            name="get_weather",
            arguments={"city": "Paris"},
            provider_metadata={"gemini": {"thoughtSignature": "c2ln"}},
        )
    ]
    first_call = next(i for i, e in enumerate(outcome.events) if isinstance(e, ToolCallDelta))
    assert all(isinstance(e, ReasoningDelta) for e in outcome.events[:first_call])


def test_several_blocks_and_a_second_signature_begins_a_block(client: httpx.Client) -> None:
    turn = Turn(
        [
            [thought("One, "), signed("first.", "sig-1"), signed("Two.", "sig-2")],
            [text("Partly ")],
            [thought("Three.")],  # thinking after the answer began: a block of its own
            [text("done.")],
        ]
    )
    outcome = both_ways(client, turn)
    receipt = outcome.receipt
    assert receipt is not None
    assert receipt.reasoning == [
        part("One, first.", "sig-1"),
        part("Two.", "sig-2"),
        part("Three.", None),
    ]
    assert receipt.text == "Partly done."


def test_a_signature_with_no_thought_text_and_no_empty_reasoning_delta(
    client: httpx.Client,
) -> None:
    turn = Turn(
        [[signed("", "sig-only")], [text("ok")], [{"thought": True}, thought(""), thought("a")]]
    )
    outcome = both_ways(client, turn)
    assert outcome.receipt is not None
    assert outcome.receipt.reasoning == [part("", "sig-only"), part("a", None)]
    assert reasoning_texts(outcome) == ["a"]


def test_a_signature_beside_answer_text_stays_answer_text(client: httpx.Client) -> None:
    outcome = both_ways(client, Turn([[text("Hi", thoughtSignature="c2ln")]]))
    assert outcome.receipt is not None
    assert outcome.receipt.text == "Hi"
    assert outcome.receipt.reasoning is None


def test_the_async_twin_streams_the_same_reasoning(client: httpx.Client) -> None:
    turn = Turn([[thought("a"), signed("b")], [text("ok")]], thoughts_tokens=3)
    PROVIDER.check_the_async_twin(client, stream_reply(stream_chunks(turn)))


def test_reasoning_counts_against_max_response_bytes(client: httpx.Client) -> None:
    piece = stream_chunks(Turn([[thought("x" * 300)]], finish=None))[0]
    PROVIDER.check_an_oversize_stream(client, trickle(piece, piece, every=0.001))


def test_a_stream_cut_after_reasoning_is_truncated(client: httpx.Client) -> None:
    turn = Turn([[thought("deep ")], [thought("thought")]], finish=None)
    outcome = PROVIDER.streamed(client, stream_reply(stream_chunks(turn)))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_STREAM_TRUNCATED
    assert reasoning_texts(outcome) == ["deep ", "thought"]


@pytest.mark.parametrize(
    ("policy", "config"),
    [
        ({"reasoning": True}, {"includeThoughts": True}),
        (
            {"reasoning": {"budget_tokens": 1024}},
            {"includeThoughts": True, "thinkingBudget": 1024},
        ),
        ({"reasoning": {"effort": "low"}}, {"includeThoughts": True, "thinkingLevel": "low"}),
        ({"reasoning": False}, None),
        ({"thinking_config": {"thinkingBudget": 0}, "reasoning": True}, {"thinkingBudget": 0}),
    ],
)
def test_thoughts_are_asked_for_through_runtime_policy(
    client: httpx.Client, policy: dict[str, Any], config: Any
) -> None:
    with serving(stream_reply(stream_chunks(Turn([[text("ok")]])))) as server:
        run_streamed(adapter_for(server, client), make_request(runtime_policy=policy))
        body = seen(server).body
    assert body.get("generationConfig", {}).get("thinkingConfig") == config


@pytest.mark.parametrize(
    "policy",
    [{"reasoning": "yes"}, {"reasoning": {"budget_tokens": "x"}}, {"reasoning": {"effort": 3}}],
)
def test_a_thought_request_that_cannot_be_sent_is_refused(
    client: httpx.Client, policy: dict[str, Any]
) -> None:
    with serving(stream_reply([])) as server, pytest.raises(PortError) as raised:
        adapter_for(server, client).execute(make_request(runtime_policy=policy))
    assert raised.value.code == ErrorCode.DATA_INVALID


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
def test_a_tool_run_sends_thoughts_back_first_with_their_signatures(
    client: httpx.Client, stream: bool
) -> None:
    fc = {**call("get_weather", {"city": "Paris"}, call_id="fc-1"), "thoughtSignature": "fc-sig"}
    turn = Turn([[thought("The user "), signed("wants weather.")], [text("Checking.")], [fc]])
    first = stream_reply(stream_chunks(turn)) if stream else json_reply(response_body(turn))
    with serving(first, stream_reply(stream_chunks(Turn([[text("Sunny.")]])))) as server:
        adapter = adapter_for(server, client)
        question = [Message(role="user", content="Weather in Paris?")]
        request = make_request(messages=question, tools=[WEATHER])
        receipt = run_streamed(adapter, request).receipt if stream else adapter.execute(request)
        assert receipt is not None
        assert receipt.tool_calls is not None
        history = [
            *question,
            Message(
                role="assistant",
                content=receipt.text or "",
                tool_calls=receipt.tool_calls,
                reasoning=receipt.reasoning,
            ),
            Message(role="tool", content="sunny", tool_call_id="fc-1"),
        ]
        assert run_streamed(adapter, make_request(messages=history, tools=[WEATHER])).receipt
        second = seen(server).body
    assert second["contents"][1] == {
        "role": "model",
        "parts": [
            {"text": "The user wants weather.", "thought": True, "thoughtSignature": SIGNATURE},
            {"text": "Checking."},
            {
                "functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "fc-1"},
                "thoughtSignature": "fc-sig",
            },
        ],
    }


def test_only_geminis_thoughts_go_back(client: httpx.Client) -> None:
    reasoning = [
        ReasoningPart(text="from elsewhere", provider_metadata={"anthropic": {"type": "x"}}),
        ReasoningPart(text="a summary"),
        ReasoningPart(),
        part("", "sig-e"),
    ]
    with serving(stream_reply(stream_chunks(Turn([[text("ok")]])))) as server:
        history = [
            Message(role="user", content="hi"),
            Message(role="assistant", content="Hello.", reasoning=reasoning),
            Message(role="user", content="again"),
        ]
        run_streamed(adapter_for(server, client), make_request(messages=history))
        body = seen(server).body
    assert body["contents"][1]["parts"] == [
        {"text": "a summary", "thought": True},
        {"text": "", "thought": True, "thoughtSignature": "sig-e"},
        {"text": "Hello."},
    ]


# --- Gemini 3's streamed function-call arguments ---------------------------------------------


def streamed_call(pieces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"functionCall": piece} for piece in pieces]


PARTIAL_PIECES: list[dict[str, Any]] = [
    {"name": "get_weather", "id": "fc-7", "willContinue": True},
    {
        "partialArgs": [{"jsonPath": "$.city", "stringValue": "Par", "willContinue": True}],
        "willContinue": True,
    },
    {
        "partialArgs": [{"jsonPath": "$.city", "stringValue": 'is "FR"'}],
        "willContinue": True,
    },
    {
        "partialArgs": [
            {"jsonPath": "$.days", "numberValue": 3},
            {"jsonPath": "$.detail.hourly", "boolValue": True},
            {"jsonPath": "$.detail.units", "nullValue": "NULL_VALUE"},
            {"jsonPath": "$.stops[0].name", "stringValue": "Lyon"},
            {"jsonPath": "$.stops[1]['the name']", "stringValue": "Nice"},
        ],
        "willContinue": True,
    },
    {},  # the end marker
]
PARTIAL_ARGUMENTS = {
    "city": 'Paris "FR"',
    "days": 3,
    "detail": {"hourly": True, "units": None},
    "stops": [{"name": "Lyon"}, {"the name": "Nice"}],
}


def test_streamed_arguments_are_fragments_of_one_call(client: httpx.Client) -> None:
    first, *rest = streamed_call(PARTIAL_PIECES)
    chunks = [[thought("Calling."), {**first, "thoughtSignature": "fc-sig"}], *[[p] for p in rest]]
    with serving(stream_reply(stream_chunks(Turn(chunks)))) as server:
        outcome = run_streamed(adapter_for(server, client), make_request(tools=[WEATHER]))
    receipt = outcome.receipt
    assert receipt is not None, outcome.error
    assert receipt.tool_calls == [
        ToolCall(
            call_id="fc-7",
            name="get_weather",
            arguments=PARTIAL_ARGUMENTS,
            provider_metadata={"gemini": {"thoughtSignature": "fc-sig"}},
        )
    ]
    fragments = [d.arguments_fragment for d in outcome.tool_deltas]
    assert fragments[0] == ""  # the name arrives first: announced at once
    assert fragments[1:3] == ['{"city":"Par', 'is \\"FR\\"']  # each piece as it arrives
    assert json.loads("".join(fragments)) == PARTIAL_ARGUMENTS
    assert {d.index for d in outcome.tool_deltas} == {0}


def test_a_streamed_call_then_a_whole_one_and_text(client: httpx.Client) -> None:
    pieces = [
        {"name": "get_weather", "willContinue": True},
        {"partialArgs": [{"jsonPath": "$.city", "stringValue": "Rome"}]},  # ends: no willContinue
    ]
    chunks = [streamed_call(pieces), [call("get_weather", {"city": "Oslo"})], [text("ok")]]
    with serving(stream_reply(stream_chunks(Turn(chunks)))) as server:
        outcome = run_streamed(adapter_for(server, client), make_request(tools=[WEATHER]))
    receipt = outcome.receipt
    assert receipt is not None, outcome.error
    assert [(c.call_id, c.arguments) for c in receipt.tool_calls or []] == [
        ("call_0", {"city": "Rome"}),
        ("call_1", {"city": "Oslo"}),
    ]
    assert receipt.text == "ok"


def test_a_streamed_call_without_arguments_and_one_ended_by_the_finish(
    client: httpx.Client,
) -> None:
    pieces = [
        {"name": "get_weather", "willContinue": True},
        {},
        {"name": "lookup", "willContinue": True},
        {"partialArgs": [{"jsonPath": "$.q", "stringValue": "x"}], "willContinue": True},
    ]
    turn = Turn([streamed_call(pieces)])  # the finishReason comes while "lookup" streams
    with serving(stream_reply(stream_chunks(turn))) as server:
        outcome = run_streamed(adapter_for(server, client), make_request(tools=[WEATHER]))
    receipt = outcome.receipt
    assert receipt is not None, outcome.error
    assert [(c.name, c.arguments) for c in receipt.tool_calls or []] == [
        ("get_weather", {}),
        ("lookup", {"q": "x"}),
    ]


@pytest.mark.parametrize(
    ("pieces", "word"),
    [
        ([{"partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}]}], "no name"),
        (
            [
                {"name": "f", "willContinue": True},
                {
                    "partialArgs": [
                        {"jsonPath": "$.a.b", "numberValue": 1},
                        {"jsonPath": "$.c", "numberValue": 2},
                        {"jsonPath": "$.a.d", "numberValue": 3},
                    ]
                },
            ],
            "revisit",
        ),
        (
            [{"name": "f", "partialArgs": [{"jsonPath": "$.a[1]", "numberValue": 1}]}],
            "out of order",
        ),
        ([{"name": "f", "partialArgs": [{"jsonPath": "city", "stringValue": "x"}]}], "path"),
        ([{"name": "f", "partialArgs": [{"jsonPath": "$.a", "numberValue": "1"}]}], "number"),
        ([{"name": "f", "willContinue": True}, {"name": "g"}], "still streaming"),
    ],
)
def test_streamed_arguments_that_cannot_be_assembled_are_invalid(
    client: httpx.Client, pieces: list[dict[str, Any]], word: str
) -> None:
    with serving(stream_reply(stream_chunks(Turn([streamed_call(pieces)])))) as server:
        outcome = run_streamed(adapter_for(server, client), make_request(tools=[WEATHER]))
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert word in outcome.error.message


def test_a_stray_end_marker_is_nothing(client: httpx.Client) -> None:
    outcome = PROVIDER.streamed(client, stream_reply(stream_chunks(Turn([[{"functionCall": {}}]]))))
    assert outcome.receipt is not None, outcome.error
    assert outcome.receipt.tool_calls is None


def test_content_after_the_finish_reason_is_kept_reasoning_included(
    client: httpx.Client,
) -> None:
    """Built-in tools: ``STOP``, then the tool's parts, more thought and text, then ``STOP``."""
    first = stream_chunks(Turn([[text("Running code.")]]))
    code = {"executableCode": {"language": "PYTHON", "code": "print(6*7)"}}
    result = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}}
    later = frame(
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [code, result, thought("So: 42.")]},
                    "index": 0,
                }
            ]
        }
    )
    last = stream_chunks(Turn([[text(" It is 42.")]]))
    outcome = PROVIDER.streamed(client, stream_reply([*first, later, *last]))
    assert outcome.receipt is not None, outcome.error
    assert outcome.receipt.text == "Running code. It is 42."
    assert outcome.receipt.reasoning == [part("So: 42.", None)]
    assert "".join(e.text for e in outcome.events if isinstance(e, Delta)) == outcome.receipt.text
