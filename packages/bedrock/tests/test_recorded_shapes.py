"""Recorded real Bedrock Converse traffic, decoded over 127.0.0.1 (the loopback Bedrock of
``bedrock_emulation``) to what an independent reading of the bodies says.

The bodies are written here in our own words, content shortened, following the structure of
ConverseStream and Converse answers recorded from the live service and published in
pydantic-ai (tests/models/cassettes/test_bedrock/):

- ``test_bedrock_model_code_execution_tool_stream.yaml`` and
  ``test_bedrock_model_with_code_execution_tool.yaml`` (Nova 2 Lite with its
  ``nova_code_interpreter`` system tool): a ``toolUse`` block whose ``type`` is
  ``server_tool_use``, then a ``toolResult`` block in the answer (``type``
  ``nova_code_interpreter_result``, its content a ``json`` item, streamed as a
  ``toolResult`` delta), then the client's own ``toolUse``; ``serverToolUsage: {}`` in the
  usage; the next request sends both server blocks back in the assistant turn;
- ``test_bedrock_model_thinking_part_redacted_stream.yaml`` and
  ``test_bedrock_model_thinking_part_redacted.yaml`` (Claude 3.7 Sonnet): reasoning blocks
  that are only ``redactedContent``, two of them streamed, sent back as they came;
- ``test_bedrock_model_stream_empty_text_delta.yaml`` (gpt-oss) and
  ``test_bedrock_model_thinking_part_stream.yaml`` (Claude Sonnet 4): text blocks with no
  ``contentBlockStart``, an empty first text block, reasoning without a signature, a
  signature as a delta of its own after the reasoning text;
- for InvokeModel (Claude's own body, unstreamed), ``test_anthropic_cache_bedrock_real_api.yaml``
  in ``tests/models/cassettes/test_anthropic/`` and
  ``test_mid_conversation_system_prompt_on_bedrock.yaml`` in
  ``tests/models/cassettes/test_anthropic_mid_conversation_system/``: a ``msg_bdrk_`` id, the
  ``cache_creation`` breakdown beside the cache counts, ``stop_details: null``,
  ``output_tokens_details`` and ``service_tier`` in the usage. No recorded
  InvokeModelWithResponseStream body was found in pydantic-ai's or vercel/ai's tests.

Every recorded event carries ``p``, a run of letters that pads its length; kept here.
(adr/0055-what-the-provider-did-itself.md, adr/0054-nothing-a-provider-sends-is-dropped.md)
"""

from __future__ import annotations

import json
from typing import Any

from runport.bedrock import BedrockAnthropicAdapter, BedrockConverseAdapter
from runport.conformance.eventstream import event_message
from runport.conformance.loopback import FaultServer, serving
from runport.conformance.providers import Outcome, make_request, run_streamed
from runport.contracts import (
    Message,
    ServerToolCall,
    ServerToolResult,
    ToolCall,
)

from .bedrock_emulation import Bedrock

KEY = "ABSKQmVkcm9ja0FQSUtleS1yZWNvcmRlZC1zaGFwZXM"
NOVA = "us.amazon.nova-2-lite-v1:0"
CLAUDE = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"

Event = tuple[str, dict[str, Any]]


def frames(events: list[Event]) -> list[bytes]:
    return [event_message(kind, payload) for kind, payload in events]


def root(server: FaultServer) -> str:
    return server.base_url.removesuffix("/v1")


def replay(model: str, events: list[Event], body: dict[str, Any]) -> tuple[Outcome, Any, Bedrock]:
    """The stream and the whole answer, each read by the Converse adapter."""
    bedrock = Bedrock(api_key=KEY)
    with (
        serving(bedrock.answering(frames(events), body=body)) as server,
        BedrockConverseAdapter(base_url=root(server), model=model, api_key=KEY) as adapter,
    ):
        streamed = run_streamed(adapter, make_request())
        whole = adapter.execute(make_request())
    return streamed, whole, bedrock


def read_stream(events: list[Event]) -> dict[str, Any]:
    """What a ConverseStream says, walked by hand: blocks by ``contentBlockIndex``, each a
    server tool call, a server tool result, a client call, reasoning or text."""
    blocks: dict[int, dict[str, Any]] = {}
    said: dict[str, Any] = {"usage": None, "stop": None}
    for kind, payload in events:
        index = payload.get("contentBlockIndex")
        if kind == "contentBlockStart":
            ((what, start),) = payload["start"].items()
            blocks[index] = {"what": what, **start, "pieces": [], "content": []}
        elif kind == "contentBlockDelta":
            ((what, delta),) = payload["delta"].items()
            block = blocks.setdefault(index, {"what": what, "pieces": [], "content": []})
            if what == "toolUse":
                block["pieces"].append(delta["input"])
            elif what == "toolResult":
                block["content"] += delta
            elif what == "text":
                block["pieces"].append(delta)
            else:
                block.setdefault("reasoning", []).append(delta)
        elif kind == "messageStop":
            said["stop"] = payload["stopReason"]
        elif kind == "metadata":
            said["usage"] = payload["usage"]
    said["blocks"] = [blocks[index] for index in sorted(blocks)]
    return said


NOVA_CALL = "tooluse_Nv2cOdeRun0aBcDeFgHiJk"
FINAL_CALL = "tooluse_Fn4lReSuLt1aBcDeFgHiJ"
NOVA_STREAM: list[Event] = [
    ("messageStart", {"p": "abcdefghijklmnopqrs", "role": "assistant"}),
    (
        "contentBlockStart",
        {
            "contentBlockIndex": 0,
            "p": "abcdefghijklmnopqrstuvwxyzABCDEFG",
            "start": {
                "toolUse": {
                    "name": "nova_code_interpreter",
                    "toolUseId": NOVA_CALL,
                    "type": "server_tool_use",
                }
            },
        },
    ),
    (
        "contentBlockDelta",
        {
            "contentBlockIndex": 0,
            "delta": {"toolUse": {"input": '{"snippet":"1234 * 5678"}'}},
            "p": "abcdefghijklm",
        },
    ),
    ("contentBlockStop", {"contentBlockIndex": 0, "p": "abcdefghijklmnopqrstuvwxyzABCDEFGH"}),
    (
        "contentBlockStart",
        {
            "contentBlockIndex": 1,
            "p": "abcdefghijklmnopqrstuv",
            "start": {
                "toolResult": {
                    "status": "success",
                    "toolUseId": NOVA_CALL,
                    "type": "nova_code_interpreter_result",
                }
            },
        },
    ),
    (
        "contentBlockDelta",
        {
            "contentBlockIndex": 1,
            "delta": {
                "toolResult": [
                    {"json": {"stdOut": "7006652", "stdErr": "", "exitCode": 0, "isError": False}}
                ]
            },
            "p": "abc",
        },
    ),
    ("contentBlockStop", {"contentBlockIndex": 1, "p": "abcdefghijklmno"}),
    (
        "contentBlockStart",
        {
            "contentBlockIndex": 2,
            "p": "abcdefghijklmnopqrstuvwxyzAB",
            "start": {
                "toolUse": {"name": "final_result", "toolUseId": FINAL_CALL, "type": "tool_use"}
            },
        },
    ),
    (
        "contentBlockDelta",
        {
            "contentBlockIndex": 2,
            "delta": {"toolUse": {"input": '{"result":7006652.0}'}},
            "p": "abcdefghijklmnopqrstuvwxyzA",
        },
    ),
    ("contentBlockStop", {"contentBlockIndex": 2, "p": "abcdefghijklmnopq"}),
    ("messageStop", {"p": "abcdefghijklmnopqrstuvwxyzAB", "stopReason": "tool_use"}),
    (
        "metadata",
        {
            "metrics": {"latencyMs": 1600},
            "p": "abc",
            "usage": {
                "inputTokens": 1002,
                "outputTokens": 59,
                "serverToolUsage": {},
                "totalTokens": 1061,
            },
        },
    ),
]
NOVA_RESULT = [{"json": {"exitCode": 0, "isError": False, "stdErr": "", "stdOut": "7006652"}}]
NOVA_BODY: dict[str, Any] = {
    "metrics": {"latencyMs": 1604},
    "output": {
        "message": {
            "content": [
                {
                    "toolUse": {
                        "input": {"snippet": "1234 * 5678"},
                        "name": "nova_code_interpreter",
                        "toolUseId": NOVA_CALL,
                        "type": "server_tool_use",
                    }
                },
                {
                    "toolResult": {
                        "content": NOVA_RESULT,
                        "status": "success",
                        "toolUseId": NOVA_CALL,
                        "type": "nova_code_interpreter_result",
                    }
                },
                {
                    "toolUse": {
                        "input": {"result": 7006652.0},
                        "name": "final_result",
                        "toolUseId": FINAL_CALL,
                        "type": "tool_use",
                    }
                },
            ],
            "role": "assistant",
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 1002, "outputTokens": 59, "serverToolUsage": {}, "totalTokens": 1061},
}


def test_nova_s_code_interpreter_is_a_server_tool_streamed_and_unstreamed() -> None:
    streamed, whole, _ = replay(NOVA, NOVA_STREAM, NOVA_BODY)
    assert streamed.receipt is not None, streamed.error
    assert streamed.receipt == whole

    said = read_stream(NOVA_STREAM)
    ran, answered, asked = said["blocks"]
    assert (ran["what"], ran["type"], answered["what"], asked["what"]) == (
        "toolUse",
        "server_tool_use",
        "toolResult",
        "toolUse",
    )
    # the provider ran the interpreter: a server call and its result, never a call to make
    assert whole.server_tools == [
        ServerToolCall(
            call_id=ran["toolUseId"],
            name=ran["name"],
            input=json.loads("".join(ran["pieces"])),
            provider_metadata={"bedrock": {"type": "server_tool_use"}},
        ),
        ServerToolResult(
            call_id=answered["toolUseId"],
            name=ran["name"],
            output=answered["content"],
            provider_metadata={"bedrock": {"type": answered["type"], "status": answered["status"]}},
        ),
    ]
    assert whole.tool_calls == [
        ToolCall(
            call_id=asked["toolUseId"],
            name=asked["name"],
            arguments=json.loads("".join(asked["pieces"])),
        )
    ]
    assert whole.finish == "tool_calls"
    assert whole.finish_reason == said["stop"]
    assert whole.usage is not None
    usage = said["usage"]
    assert (whole.usage.input_tokens, whole.usage.output_tokens) == (
        usage["inputTokens"],
        usage["outputTokens"],
    )
    # the server call and its result are given as they finish, before the client's call
    kinds = [type(event).__name__ for event in streamed.events]
    assert kinds[:2] == ["ServerToolCall", "ServerToolResult"]
    assert "ToolCallDelta" not in kinds[:2]


def test_the_next_turn_sends_the_server_blocks_back_as_bedrock_made_them() -> None:
    # what the recorded second request's assistant turn holds, in its order
    _, whole, _ = replay(NOVA, NOVA_STREAM, NOVA_BODY)
    history = [
        Message(role="user", content="What is 1234 * 5678?"),
        Message(
            role="assistant",
            content="",
            tool_calls=whole.tool_calls,
            server_tools=whole.server_tools,
        ),
        Message(role="tool", content="Final result processed.", tool_call_id=FINAL_CALL),
    ]
    bedrock = Bedrock(api_key=KEY)
    with (
        serving(bedrock.answering(frames(NOVA_STREAM), body=NOVA_BODY)) as server,
        BedrockConverseAdapter(base_url=root(server), model=NOVA, api_key=KEY) as adapter,
    ):
        adapter.execute(make_request(messages=history))
    sent = bedrock.received[0].body["messages"][1]
    assert sent == {
        "role": "assistant",
        "content": [
            {
                "toolUse": {
                    "toolUseId": NOVA_CALL,
                    "name": "nova_code_interpreter",
                    "input": {"snippet": "1234 * 5678"},
                    "type": "server_tool_use",
                }
            },
            {
                "toolResult": {
                    "toolUseId": NOVA_CALL,
                    "content": NOVA_RESULT,
                    "type": "nova_code_interpreter_result",
                    "status": "success",
                }
            },
            {
                "toolUse": {
                    "toolUseId": FINAL_CALL,
                    "name": "final_result",
                    "input": {"result": 7006652.0},
                }
            },
        ],
    }


SEALED = ("RXRrRUNrZ0lCeEFCR0FJcVFKVGZxUy9QWXVB", "RXFBRENrZ0lCeEFCR0FJcVFCM2g1R3lISkQ0")
REFUSAL = (
    "I notice you've sent what appears to be some",
    " kind of command or trigger string.",
    "\n\nWhat would you like to talk about today?",
)
REDACTED_STREAM: list[Event] = [
    ("messageStart", {"p": "abcde", "role": "assistant"}),
    *[
        event
        for index, sealed in enumerate(SEALED)
        for event in (
            (
                "contentBlockDelta",
                {
                    "contentBlockIndex": index,
                    "delta": {"reasoningContent": {"redactedContent": sealed}},
                    "p": "abcdefghijklmnopqrstuvwxyz"[: 7 + 10 * index],
                },
            ),
            ("contentBlockStop", {"contentBlockIndex": index, "p": "abcdefg"}),
        )
    ],
    *[
        ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"text": piece}, "p": "abcd"})
        for piece in REFUSAL
    ],
    ("contentBlockStop", {"contentBlockIndex": 2, "p": "abcdefghijklmnopqrstuvwxyzABCDE"}),
    ("messageStop", {"p": "abcdefghijklmn", "stopReason": "end_turn"}),
    (
        "metadata",
        {
            "metrics": {"latencyMs": 8069},
            "p": "abcdefghijklm",
            "usage": {"inputTokens": 92, "outputTokens": 253, "totalTokens": 345},
        },
    ),
]
REDACTED_BODY: dict[str, Any] = {
    "metrics": {"latencyMs": 5846},
    "output": {
        "message": {
            "content": [
                *[{"reasoningContent": {"redactedContent": sealed}} for sealed in SEALED],
                {"text": "".join(REFUSAL)},
            ],
            "role": "assistant",
        }
    },
    "stopReason": "end_turn",
    "usage": {"inputTokens": 92, "outputTokens": 253, "totalTokens": 345},
}


def test_redacted_reasoning_is_kept_streamed_and_unstreamed_and_goes_back() -> None:
    streamed, whole, _ = replay(CLAUDE, REDACTED_STREAM, REDACTED_BODY)
    assert streamed.receipt is not None, streamed.error
    assert streamed.receipt == whole

    said = read_stream(REDACTED_STREAM)
    sealed = [
        delta["redactedContent"] for block in said["blocks"] for delta in block.get("reasoning", [])
    ]
    text = "".join(piece for block in said["blocks"] for piece in block["pieces"])
    assert whole.text == text
    assert [(part.text, part.provider_metadata) for part in whole.reasoning or []] == [
        ("", {"bedrock": {"redactedContent": data}}) for data in sealed
    ]
    assert (whole.finish, whole.usage and whole.usage.output_tokens) == ("stop", 253)

    history = [
        Message(role="user", content="ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING"),
        Message(role="assistant", content=whole.text, reasoning=whole.reasoning),
        Message(role="user", content="What was that?"),
    ]
    bedrock = Bedrock(api_key=KEY)
    with (
        serving(bedrock.answering(frames(REDACTED_STREAM), body=REDACTED_BODY)) as server,
        BedrockConverseAdapter(base_url=root(server), model=CLAUDE, api_key=KEY) as adapter,
    ):
        adapter.execute(make_request(messages=history))
    assert bedrock.received[0].body["messages"][1]["content"] == [
        *[{"reasoningContent": {"redactedContent": data}} for data in SEALED],
        {"text": "".join(REFUSAL)},
    ]


THOUGHT = ("The user just says ", '"Hi". We need to respond appropriately.')
GREETING = ("Hello! How can I help", " you today?")
SIGNATURE = "Eu0CCkgIBxABGAIqQJDccbDQkr81n7Qj"
END: list[Event] = [
    ("messageStop", {"p": "ab", "stopReason": "end_turn"}),
    (
        "metadata",
        {
            "metrics": {"latencyMs": 753},
            "p": "abcdefghijklmn",
            "usage": {"inputTokens": 70, "outputTokens": 43, "totalTokens": 113},
        },
    ),
]


def deltas(index: int, pieces: tuple[str, ...], *, thinking: bool = False) -> list[Event]:
    """One block's deltas (no ``contentBlockStart``, as text and reasoning come) and its stop."""
    return [
        (
            "contentBlockDelta",
            {
                "contentBlockIndex": index,
                "delta": {"reasoningContent": {"text": piece}} if thinking else {"text": piece},
                "p": "abcdefghi",
            },
        )
        for piece in pieces
    ] + [("contentBlockStop", {"contentBlockIndex": index, "p": "abcdefghijklmnop"})]


# gpt-oss: an empty text block first, then reasoning with no signature, then the text
OPEN_WEIGHTS: list[Event] = [
    ("messageStart", {"p": "abcdefghijklmnopqrstuvwxyz", "role": "assistant"}),
    *deltas(0, ("",)),
    *deltas(1, THOUGHT, thinking=True),
    *deltas(2, GREETING),
    *END,
]
# Claude: the reasoning's signature a delta of its own after the reasoning text
SIGNED = [
    ("messageStart", {"p": "abcdefghijklmnopqrstuvwxyzAB", "role": "assistant"}),
    *deltas(0, THOUGHT, thinking=True)[:-1],
    (
        "contentBlockDelta",
        {
            "contentBlockIndex": 0,
            "delta": {"reasoningContent": {"signature": SIGNATURE}},
            "p": "abcdefghijklmnopqrstuvwx",
        },
    ),
    ("contentBlockStop", {"contentBlockIndex": 0, "p": "abcdefghijklmnopqrstuvwxyzABCDE"}),
    *deltas(1, GREETING),
    *END,
]


def test_text_blocks_without_a_start_an_empty_block_and_a_late_signature() -> None:
    read: list[list[Any]] = []
    for events in (OPEN_WEIGHTS, SIGNED):
        streamed, _, _ = replay(NOVA, events, REDACTED_BODY)
        assert streamed.receipt is not None, streamed.error
        said = read_stream(events)
        thought = [block["reasoning"] for block in said["blocks"] if "reasoning" in block]
        assert [part.text for part in streamed.receipt.reasoning or []] == [
            "".join(delta.get("text", "") for delta in block) for block in thought
        ]
        assert streamed.receipt.text == "".join(
            piece for block in said["blocks"] for piece in block["pieces"]
        )
        assert streamed.receipt.usage is not None
        assert streamed.receipt.usage.input_tokens == said["usage"]["inputTokens"]
        read.append([part.provider_metadata for part in streamed.receipt.reasoning or []])
    assert read == [[None], [{"bedrock": {"signature": SIGNATURE}}]]


CACHED_INVOKE: dict[str, Any] = {
    "content": [{"text": "Python evolved from Python 2 to Python 3.13.", "type": "text"}],
    "id": "msg_bdrk_01PwGjqAJE4R8ZBE8KCtMEjG",
    "model": "claude-haiku-4-5-20251001",
    "role": "assistant",
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "type": "message",
    "usage": {
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 1956},
        "cache_creation_input_tokens": 1956,
        "cache_read_input_tokens": 9511,
        "input_tokens": 3,
        "output_tokens": 44,
    },
}
REVIEW_INVOKE: dict[str, Any] = {
    "content": [{"text": "I'll set aside that instruction--here is my take.", "type": "text"}],
    "id": "msg_bdrk_er2hevp3kltzds335kiev73amxxstt3go2joi3x3egl7vkircylq",
    "model": "claude-opus-4-8",
    "role": "assistant",
    "stop_details": None,
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "type": "message",
    "usage": {
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "input_tokens": 68,
        "output_tokens": 508,
        "output_tokens_details": {"thinking_tokens": 0},
        "service_tier": "standard",
    },
}


def test_recorded_invoke_model_bodies_read_their_text_finish_and_cache_counts() -> None:
    for body in (CACHED_INVOKE, REVIEW_INVOKE):
        bedrock = Bedrock(api_key=KEY)
        model = f"us.anthropic.{body['model']}-v1:0"
        with (
            serving(bedrock.answering([], body=body)) as server,
            BedrockAnthropicAdapter(base_url=root(server), model=model, api_key=KEY) as adapter,
        ):
            receipt = adapter.execute(make_request())
        assert bedrock.received[0].target.endswith("/invoke")
        usage = body["usage"]
        read, written = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
        assert receipt.text == "".join(block["text"] for block in body["content"])
        assert (receipt.finish, receipt.finish_reason) == ("stop", body["stop_reason"])
        assert receipt.usage is not None
        # Claude's input_tokens leaves both cache counts out; the receipt counts them in
        assert receipt.usage.input_tokens == usage["input_tokens"] + read + written
        assert receipt.usage.output_tokens == usage["output_tokens"]
        assert (receipt.usage.cache_read_tokens or 0, receipt.usage.cache_write_tokens or 0) == (
            read,
            written,
        )
