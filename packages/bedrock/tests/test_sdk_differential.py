"""For the same bytes from the loopback Bedrock (``bedrock_emulation``, SigV4 verified), the
receipt agrees with what the official clients make of them — boto3's ``bedrock-runtime``
``converse_stream`` and ``converse``, and Anthropic's ``AnthropicBedrock`` — on text, tool calls,
reasoning, finish reason and usage, across random turns and random HTTP chunkings of the
eventstream.

boto3 and the ``anthropic`` SDK are test-only dependencies (the tox env and the root dev
group); every client signs with the same fake credentials, which the emulation checks by
recomputing the signature.
"""

from __future__ import annotations

import json
from base64 import b64encode
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import boto3
import httpx
import pytest
from botocore.config import Config
from botocore.credentials import Credentials
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.bedrock import BedrockAnthropicAdapter, BedrockConverseAdapter, SigV4Auth
from runport.conformance.eventstream import event_message
from runport.conformance.loopback import Playback, rechunk
from runport.conformance.providers import WEATHER, make_request, run_streamed

from .bedrock_emulation import ACCESS_KEY, REGION, SECRET_KEY, Bedrock

TOKEN = "session-token-for-runport-differential"
CREDENTIALS = Credentials(ACCESS_KEY, SECRET_KEY, TOKEN)
MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"
ARN = "arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/a1b2c3d4e5"
PROMPT = [{"role": "user", "content": [{"text": "hi"}]}]
SETTINGS = settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# --- turns, and their bytes ------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    pieces: list[str]


@dataclass(frozen=True)
class Tool:
    call_id: str
    name: str
    fragments: list[str]

    @property
    def arguments(self) -> Any:
        return json.loads("".join(self.fragments))


@dataclass(frozen=True)
class Reasoning:
    pieces: list[str]
    signature: str


Block = Text | Tool | Reasoning


@dataclass(frozen=True)
class Turn:
    blocks: list[Block]
    stop: str
    usage: dict[str, int]


def _cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c for c in cuts if 0 < c < len(text)})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


_arguments = st.dictionaries(
    st.sampled_from(["city", "days", "ß"]),
    st.one_of(st.integers(-5, 500), st.text(max_size=8), st.booleans(), st.none()),
    max_size=3,
)


@st.composite
def tools(draw: st.DrawFn) -> Tool:
    text = json.dumps(draw(_arguments), ensure_ascii=False)
    fragments = _cut(text, draw(st.lists(st.integers(1, 40), max_size=3)))
    call_id = f"tooluse_{draw(st.integers(0, 10**6)):07d}"
    return Tool(call_id, draw(st.sampled_from(["get_weather", "lookup"])), fragments)


_pieces = st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=4)
_block: st.SearchStrategy[Block] = st.one_of(
    _pieces.map(Text),
    tools(),
    st.builds(Reasoning, _pieces, st.from_regex(r"[A-Za-z0-9+/]{4,24}={0,2}", fullmatch=True)),
)
_usage = st.fixed_dictionaries(
    {"inputTokens": st.integers(0, 10**6), "outputTokens": st.integers(0, 10**5)},
    optional={
        "cacheReadInputTokens": st.integers(0, 10**4),
        "cacheWriteInputTokens": st.integers(0, 10**4),
    },
)
turns = st.builds(
    Turn,
    # a call id names one block of a turn (the API never repeats one; runport refuses a repeat)
    blocks=st.lists(
        _block,
        min_size=1,
        max_size=4,
        unique_by=lambda block: block.call_id if isinstance(block, Tool) else id(block),
    ),
    stop=st.sampled_from(["end_turn", "tool_use", "max_tokens", "stop_sequence"]),
    usage=_usage,
)


def converse_stream(turn: Turn) -> bytes:
    """The turn as ConverseStream sends it: one eventstream message per event."""
    out = [event_message("messageStart", {"role": "assistant"})]
    for index, block in enumerate(turn.blocks):
        deltas: list[dict[str, Any]]
        if isinstance(block, Text):
            deltas = [{"text": piece} for piece in block.pieces]
        elif isinstance(block, Tool):
            start = {"toolUse": {"toolUseId": block.call_id, "name": block.name}}
            opened = {"contentBlockIndex": index, "start": start}
            out.append(event_message("contentBlockStart", opened))
            deltas = [{"toolUse": {"input": fragment}} for fragment in block.fragments]
        else:
            deltas = [{"reasoningContent": {"text": piece}} for piece in block.pieces]
            deltas.append({"reasoningContent": {"signature": block.signature}})
        for delta in deltas:
            out.append(
                event_message("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})
            )
        out.append(event_message("contentBlockStop", {"contentBlockIndex": index}))
    out.append(event_message("messageStop", {"stopReason": turn.stop}))
    out.append(event_message("metadata", {"usage": _total(turn), "metrics": {"latencyMs": 7}}))
    return b"".join(out)


def converse_body(turn: Turn) -> dict[str, Any]:
    """The turn as Converse answers it, in one JSON body."""
    content: list[dict[str, Any]] = []
    for block in turn.blocks:
        if isinstance(block, Text):
            content.append({"text": "".join(block.pieces)})
        elif isinstance(block, Tool):
            use = {"toolUseId": block.call_id, "name": block.name, "input": block.arguments}
            content.append({"toolUse": use})
        else:
            text = {"text": "".join(block.pieces), "signature": block.signature}
            content.append({"reasoningContent": {"reasoningText": text}})
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": turn.stop,
        "usage": _total(turn),
        "metrics": {"latencyMs": 7},
    }


def _total(turn: Turn) -> dict[str, int]:
    return {**turn.usage, "totalTokens": sum(turn.usage.values())}


# --- the clients -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bedrock() -> Bedrock:
    return Bedrock(credentials=CREDENTIALS)


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    """runport's client for the module (an ``httpx.Client`` is slow to make: its TLS
    context)."""
    with httpx.Client() as client:
        yield client


@pytest.fixture(scope="module")
def boto(playback: Playback) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name=REGION,
        endpoint_url=playback.base_url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        aws_session_token=TOKEN,
        config=Config(retries={"total_max_attempts": 1}),
    )


@pytest.fixture(scope="module")
def claude(playback: Playback) -> Iterator[Any]:
    client = anthropic.AnthropicBedrock(
        aws_access_key=ACCESS_KEY,
        aws_secret_key=SECRET_KEY,
        aws_session_token=TOKEN,
        aws_region=REGION,
        base_url=playback.base_url,
        max_retries=0,
    )
    yield client
    client.close()


def serve(
    playback: Playback,
    bedrock: Bedrock,
    data: bytes,
    cuts: list[int],
    body: Any,
) -> None:
    """The emulation answers each request: ``data`` cut at ``cuts`` (one HTTP chunk a piece)
    when streamed, ``body`` when not."""
    playback.answer = bedrock.answering(rechunk(data, cuts), body=body)


def receipt_of(adapter: Any, *, stream: bool) -> Any:
    with adapter:
        if stream:
            outcome = run_streamed(adapter, make_request(tools=[WEATHER]))
            assert outcome.error is None, outcome.error
            return outcome.receipt
        return adapter.execute(make_request(tools=[WEATHER]))


def receipt_view(receipt: Any) -> dict[str, Any]:
    calls = receipt.tool_calls
    reasoning = receipt.reasoning
    return {
        "text": receipt.text,
        "calls": [(c.call_id, c.name, c.arguments) for c in calls] if calls else None,
        "reasoning": [(p.text, _signature(p.provider_metadata)) for p in reasoning]
        if reasoning
        else None,
        "finish": receipt.finish_reason,
        "usage": (
            receipt.usage.input_tokens,
            receipt.usage.output_tokens,
            receipt.usage.cache_read_tokens,
            receipt.usage.cache_write_tokens,
        ),
    }


def _signature(metadata: Any) -> str | None:
    for mine in (metadata or {}).values():
        return mine.get("signature") or mine.get("data")
    return None


def _usage(usage: dict[str, Any]) -> tuple[int, int, int | None, int | None]:
    """boto3's counts as ADR 0051 reads them: Converse's ``inputTokens`` leaves the cached
    tokens out, the receipt's input counts them in."""
    read = usage.get("cacheReadInputTokens") or None
    write = usage.get("cacheWriteInputTokens") or None
    total = usage["inputTokens"] + (read or 0) + (write or 0)
    return (total, usage["outputTokens"], read, write)


def converse_view(content: list[dict[str, Any]], stop: str, usage: dict[str, Any]) -> Any:
    """boto3's answer (Converse's content blocks, or those assembled from the stream's events
    as its documentation shows) in the receipt's terms."""
    text = "".join(block["text"] for block in content if "text" in block)
    calls = [
        (use["toolUseId"], use["name"], use["input"])
        for use in (block["toolUse"] for block in content if "toolUse" in block)
    ]
    reasoning = [
        (said["text"], said.get("signature"))
        for said in (
            block["reasoningContent"]["reasoningText"]
            for block in content
            if "reasoningContent" in block
        )
    ]
    return {
        "text": text or None,
        "calls": calls or None,
        "reasoning": reasoning or None,
        "finish": stop,
        "usage": _usage(usage),
    }


def assembled(stream: Any) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    """boto3's ``converse_stream`` events gathered into Converse's content blocks."""
    blocks: dict[int, dict[str, Any]] = {}
    stop, usage = "", {}
    for event in stream:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = start["start"]["toolUse"]
            blocks[start["contentBlockIndex"]] = {"toolUse": {**use, "input": ""}}
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]["delta"]
            block = blocks.setdefault(event["contentBlockDelta"]["contentBlockIndex"], {})
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            elif "toolUse" in delta:
                block["toolUse"]["input"] += delta["toolUse"]["input"]
            else:
                said = block.setdefault("reasoningContent", {"reasoningText": {"text": ""}})
                piece = delta["reasoningContent"]
                said["reasoningText"]["text"] += piece.get("text", "")
                if "signature" in piece:
                    said["reasoningText"]["signature"] = piece["signature"]
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
        elif "metadata" in event:
            usage = event["metadata"]["usage"]
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"])
    return [blocks[index] for index in sorted(blocks)], stop, usage


# --- Converse: boto3 ---------------------------------------------------------------------------


def converse_adapter(
    playback: Playback, http: httpx.Client, model: str = MODEL
) -> BedrockConverseAdapter:
    auth = SigV4Auth(REGION, credentials=CREDENTIALS)
    return BedrockConverseAdapter(
        base_url=playback.base_url, model=model, auth=auth, http_client=http
    )


@SETTINGS
@given(turn=turns, cuts=st.lists(st.integers(0, 3000), max_size=12))
def test_converse_stream_agrees_with_boto3(
    playback: Playback, http: httpx.Client, bedrock: Bedrock, boto: Any, turn: Turn, cuts: list[int]
) -> None:
    serve(playback, bedrock, converse_stream(turn), cuts, converse_body(turn))
    receipt = receipt_of(converse_adapter(playback, http), stream=True)
    answer = boto.converse_stream(modelId=MODEL, messages=PROMPT)
    assert receipt_view(receipt) == converse_view(*assembled(answer["stream"]))


@SETTINGS
@given(turn=turns)
def test_converse_agrees_with_boto3(
    playback: Playback, http: httpx.Client, bedrock: Bedrock, boto: Any, turn: Turn
) -> None:
    serve(playback, bedrock, b"", [], converse_body(turn))
    receipt = receipt_of(converse_adapter(playback, http), stream=False)
    answer = boto.converse(modelId=MODEL, messages=PROMPT)
    view = converse_view(
        answer["output"]["message"]["content"], answer["stopReason"], answer["usage"]
    )
    assert receipt_view(receipt) == view


def test_boto3_and_runport_reach_an_arn_s_model_and_both_signatures_verify(
    playback: Playback, http: httpx.Client, bedrock: Bedrock, boto: Any
) -> None:
    turn = Turn([Text(["an ", "ARN"])], "end_turn", {"inputTokens": 3, "outputTokens": 2})
    serve(playback, bedrock, converse_stream(turn), [5, 50], None)
    before = len(bedrock.received)
    receipt = receipt_of(converse_adapter(playback, http, ARN), stream=True)
    answer = boto.converse_stream(modelId=ARN, messages=PROMPT)
    assert receipt_view(receipt) == converse_view(*assembled(answer["stream"]))
    ours, theirs = bedrock.received[before:]  # both passed the signature check
    assert ours.model == theirs.model == ARN
    assert ours.headers["authorization"].startswith("AWS4-HMAC-SHA256 ")


# --- Claude through InvokeModel: AnthropicBedrock --------------------------------------------

BEDROCK_VERSION = {"anthropic_version": "bedrock-2023-05-31"}
"""The ``anthropic_version`` Bedrock documents, which the emulation checks. The SDK's own
default (anthropic 2.x sends its Messages API version, a date) is refused by the emulation, so
it is set here, as the SDK allows, and both clients send the same body."""
CLAUDE_PROMPT = [{"role": "user", "content": "hi"}]


def chunk(event: dict[str, Any]) -> bytes:
    """One Anthropic stream event as InvokeModelWithResponseStream relays it."""
    return event_message("chunk", {"bytes": b64encode(json.dumps(event).encode()).decode()})


def anthropic_events(turn: Turn) -> list[dict[str, Any]]:
    """The turn as Anthropic's Messages stream: its reasoning as ``thinking`` blocks."""
    start = {
        "id": "msg_bdrk_diff",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": turn.usage["inputTokens"],
            "output_tokens": 1,
            "cache_read_input_tokens": turn.usage.get("cacheReadInputTokens"),
            "cache_creation_input_tokens": turn.usage.get("cacheWriteInputTokens"),
        },
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(turn.blocks):
        deltas: list[dict[str, Any]]
        if isinstance(block, Text):
            opened: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in block.pieces]
        elif isinstance(block, Tool):
            opened = {"type": "tool_use", "id": block.call_id, "name": block.name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": f} for f in block.fragments]
        else:
            opened = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in block.pieces]
            deltas.append({"type": "signature_delta", "signature": block.signature})
        events.append({"type": "content_block_start", "index": index, "content_block": opened})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    usage = {"output_tokens": turn.usage["outputTokens"]}
    stop = {"stop_reason": turn.stop, "stop_sequence": None}
    metrics = {"inputTokenCount": turn.usage["inputTokens"], "invocationLatency": 9}
    return [
        *events,
        {"type": "message_delta", "delta": stop, "usage": usage},
        {"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics},
    ]


def anthropic_body(turn: Turn) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in turn.blocks:
        if isinstance(block, Text):
            content.append({"type": "text", "text": "".join(block.pieces)})
        elif isinstance(block, Tool):
            content.append(
                {
                    "type": "tool_use",
                    "id": block.call_id,
                    "name": block.name,
                    "input": block.arguments,
                }
            )
        else:
            said = "".join(block.pieces)
            content.append({"type": "thinking", "thinking": said, "signature": block.signature})
    return {
        "id": "msg_bdrk_diff",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": content,
        "stop_reason": turn.stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": turn.usage["inputTokens"],
            "output_tokens": turn.usage["outputTokens"],
            "cache_read_input_tokens": turn.usage.get("cacheReadInputTokens"),
            "cache_creation_input_tokens": turn.usage.get("cacheWriteInputTokens"),
        },
    }


def message_view(message: Any) -> dict[str, Any]:
    """The SDK's message in the receipt's terms (its ``input_tokens`` leave the cached
    tokens out, as Converse's do)."""
    content = message.content
    usage = message.usage
    return {
        "text": "".join(b.text for b in content if b.type == "text") or None,
        "calls": [(b.id, b.name, b.input) for b in content if b.type == "tool_use"] or None,
        "reasoning": [(b.thinking, b.signature) for b in content if b.type == "thinking"] or None,
        "finish": message.stop_reason,
        "usage": _usage(
            {
                "inputTokens": usage.input_tokens,
                "outputTokens": usage.output_tokens,
                "cacheReadInputTokens": usage.cache_read_input_tokens,
                "cacheWriteInputTokens": usage.cache_creation_input_tokens,
            }
        ),
    }


def anthropic_adapter(playback: Playback, http: httpx.Client) -> BedrockAnthropicAdapter:
    auth = SigV4Auth(REGION, credentials=CREDENTIALS)
    return BedrockAnthropicAdapter(
        base_url=playback.base_url, model=MODEL, auth=auth, http_client=http
    )


@SETTINGS
@given(turn=turns, cuts=st.lists(st.integers(0, 4000), max_size=12))
def test_invoke_with_response_stream_agrees_with_anthropic_bedrock(
    playback: Playback,
    http: httpx.Client,
    bedrock: Bedrock,
    claude: Any,
    turn: Turn,
    cuts: list[int],
) -> None:
    data = b"".join(chunk(event) for event in anthropic_events(turn))
    serve(playback, bedrock, data, cuts, anthropic_body(turn))
    receipt = receipt_of(anthropic_adapter(playback, http), stream=True)
    with claude.messages.stream(
        model=MODEL, max_tokens=64, messages=CLAUDE_PROMPT, extra_body=BEDROCK_VERSION
    ) as stream:
        message = stream.get_final_message()
    assert receipt_view(receipt) == message_view(message)


@SETTINGS
@given(turn=turns)
def test_invoke_agrees_with_anthropic_bedrock(
    playback: Playback, http: httpx.Client, bedrock: Bedrock, claude: Any, turn: Turn
) -> None:
    serve(playback, bedrock, b"", [], anthropic_body(turn))
    receipt = receipt_of(anthropic_adapter(playback, http), stream=False)
    message = claude.messages.create(
        model=MODEL, max_tokens=64, messages=CLAUDE_PROMPT, extra_body=BEDROCK_VERSION
    )
    assert receipt_view(receipt) == message_view(message)
