"""What Claude did itself, over real HTTP on 127.0.0.1: ``server_tool_use`` and ``*_tool_result``
blocks are ``ServerToolCall`` / ``ServerToolResult``, block citations and ``citations_delta``
are ``Citation``s, streamed and unstreamed alike; a run sends the blocks back; a block of a kind
the codec does not know is kept (adr/0054-nothing-a-provider-sends-is-dropped.md,
adr/0055-what-the-provider-did-itself.md).

The bodies are written here from the Messages API's documented shapes (web search, web fetch,
code execution, citations), each whole block then cut into the events a stream sends."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.anthropic import AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter
from runport.conformance.loopback import json_reply, seen, serving, stream_reply
from runport.conformance.providers import (
    OBJECT_SCHEMA,
    Outcome,
    Provider,
    make_request,
    run_streamed,
)
from runport.contracts import (
    Citation,
    CitationSource,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    Message,
    ServerToolCall,
    ServerToolResult,
)
from runport.ports import PortError

from .anthropic_wire import event

PROVIDER = Provider(AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter, "claude-test", "k")
adapter_for = PROVIDER.adapter_for

ENCRYPTED = "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2ISDOPAQUE"
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_01WYG3", "name": "web_search"}
SEARCH_INPUT = {"query": "claude shannon birth date"}
RESULTS = [
    {
        "type": "web_search_result",
        "url": "https://en.wikipedia.org/wiki/Claude_Shannon",
        "title": "Claude Shannon - Wikipedia",
        "encrypted_content": ENCRYPTED,
        "page_age": "April 30, 2025",
    }
]
CITED = {
    "type": "web_search_result_location",
    "url": "https://en.wikipedia.org/wiki/Claude_Shannon",
    "title": "Claude Shannon - Wikipedia",
    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
    "cited_text": "Claude Elwood Shannon (April 30, 1916 – February 24, 2001) was an American",
}
WEB_TURN: list[dict[str, Any]] = [
    {"type": "text", "text": "I'll search for that."},
    {**SEARCH, "input": SEARCH_INPUT},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01WYG3", "content": RESULTS},
    {"type": "text", "text": "Based on the results, "},
    {"type": "text", "text": "he was born on April 30, 1916.", "citations": [CITED]},
]


def body(blocks: list[dict[str, Any]], stop_reason: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "server_tool_use": {"web_search_requests": 1},
        },
    }


def events(blocks: list[dict[str, Any]], stop_reason: str = "end_turn") -> list[bytes]:
    """The blocks as a stream sends them: a text block opens empty, its citations arrive as
    ``citations_delta`` before its text; a server tool's input as ``input_json_delta``
    fragments; a result block whole in its ``content_block_start``."""
    start = {**body([]), "stop_reason": None}
    out = [event("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(blocks):
        deltas: list[dict[str, Any]] = []
        opened = block
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            if "citations" in block:
                opened["citations"] = []
                deltas += [{"type": "citations_delta", "citation": c} for c in block["citations"]]
            text = block["text"]
            half = len(text) // 2
            deltas += [
                {"type": "text_delta", "text": piece} for piece in (text[:half], text[half:])
            ]
        elif block["type"] in ("server_tool_use", "mcp_tool_use"):
            opened = {**block, "input": {}}
            whole = json.dumps(block.get("input", {}))
            deltas += [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in (whole[:7], whole[7:])
            ]
        out.append(
            event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opened},
            )
        )
        for delta in deltas:
            out.append(
                event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    out.append(event("message_stop", {"type": "message_stop"}))
    return out


def both_ways(
    client: httpx.Client, blocks: list[dict[str, Any]], **request: Any
) -> tuple[Outcome, ExecutionReceipt]:
    with serving(stream_reply(events(blocks)), json_reply(body(blocks))) as server:
        adapter = adapter_for(server, client)
        outcome = run_streamed(adapter, make_request(**request))
        whole = adapter.execute(make_request(**request))
    assert outcome.receipt is not None, outcome.error
    assert whole == outcome.receipt
    return outcome, whole


def test_a_web_search_turn_streams_its_search_its_results_and_its_citation(
    client: httpx.Client,
) -> None:
    outcome, receipt = both_ways(client, WEB_TURN)
    call = ServerToolCall(
        call_id="srvtoolu_01WYG3",
        name="web_search",
        input=SEARCH_INPUT,
        provider_metadata={"anthropic": {"type": "server_tool_use"}},
    )
    result = ServerToolResult(
        call_id="srvtoolu_01WYG3",
        name="web_search",
        output=RESULTS,
        provider_metadata={"anthropic": {"type": "web_search_tool_result"}},
    )
    assert receipt.server_tools == [call, result]
    assert (
        receipt.text == "I'll search for that.Based on the results, he was born on April 30, 1916."
    )
    assert receipt.tool_calls is None  # never a call the run makes
    citation = Citation(
        source=CitationSource(type="url", url=CITED["url"], title=CITED["title"]),
        cited_text=CITED["cited_text"],
        start=len("I'll search for that.Based on the results, "),
    )
    assert receipt.citations == [citation]
    kinds = [type(e).__name__ for e in outcome.events[:-1]]
    # each arrives as its block does: the call when its input is whole, the citation before
    # the text it belongs to
    assert kinds == [
        "Delta", "Delta", "ServerToolCall", "ServerToolResult", "Delta", "Delta",
        "Citation", "Delta", "Delta",
    ]  # fmt: skip


def test_code_execution_and_its_error_shape(client: httpx.Client) -> None:
    run = {"type": "server_tool_use", "id": "srvtoolu_c1", "name": "code_execution"}
    output = {
        "type": "code_execution_result",
        "stdout": "4\n",
        "stderr": "",
        "return_code": 0,
        "content": [],
    }
    failed = {"type": "code_execution_tool_result_error", "error_code": "unavailable"}
    blocks = [
        {**run, "input": {"code": "print(2 + 2)"}},
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_c1", "content": output},
        {**run, "id": "srvtoolu_c2", "input": {"code": "1/0"}},
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_c2", "content": failed},
        {"type": "text", "text": "2 + 2 is 4."},
    ]
    _, receipt = both_ways(client, blocks)
    tools = receipt.server_tools or []
    assert [(t.kind, t.call_id) for t in tools] == [
        ("ServerToolCall", "srvtoolu_c1"),
        ("ServerToolResult", "srvtoolu_c1"),
        ("ServerToolCall", "srvtoolu_c2"),
        ("ServerToolResult", "srvtoolu_c2"),
    ]
    first, second = tools[1], tools[3]
    assert isinstance(first, ServerToolResult)
    assert isinstance(second, ServerToolResult)
    assert (first.output, first.error, first.name) == (output, None, "code_execution")
    assert (second.error, second.output) == ("unavailable", failed)


def test_a_web_fetch_announced_without_input_and_document_citations(client: httpx.Client) -> None:
    fetched = {
        "type": "web_fetch_result",
        "url": "https://example.com/article",
        "content": {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "Article."},
        },
    }
    located = {
        "type": "char_location",
        "cited_text": "The grass is green.",
        "document_index": 0,
        "document_title": "My Document",
        "start_char_index": 0,
        "end_char_index": 20,
    }
    blocks = [
        {"type": "server_tool_use", "id": "srvtoolu_f", "name": "web_fetch"},
        {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_f", "content": fetched},
        {"type": "text", "text": "The grass is green.", "citations": [located]},
    ]
    _, receipt = both_ways(client, blocks)
    assert receipt.server_tools is not None
    assert receipt.server_tools[0].input == {}
    assert receipt.citations == [
        Citation(
            source=CitationSource(type="document", document_index=0, title="My Document"),
            cited_text="The grass is green.",
            start=0,
        )
    ]


def test_a_result_for_a_search_never_announced_is_coded(client: httpx.Client) -> None:
    blocks = [WEB_TURN[2], {"type": "text", "text": "ok"}]
    PROVIDER.check_refused_both_ways(
        client,
        stream_reply(events(blocks)),
        json_reply(body(blocks)),
        ErrorCode.RUNTIME_INVALID_RESPONSE,
        "never announced",
    )


def test_a_block_of_an_unknown_kind_is_kept_not_dropped(client: httpx.Client) -> None:
    novel = {"type": "container_upload", "file_id": "file_011"}
    _, receipt = both_ways(client, [novel])
    assert receipt.text is None
    assert receipt.provider_metadata == {"anthropic": {"unknown": [novel]}}


def test_a_run_sends_the_blocks_back_with_encrypted_content_intact(client: httpx.Client) -> None:
    """What the API needs to continue a conversation that searched: the blocks, unmodified."""
    with serving(json_reply(body(WEB_TURN))) as server:
        receipt = adapter_for(server, client).execute(make_request())
        history = [
            Message(role="user", content="When was Shannon born?"),
            Message(
                role="assistant", content=receipt.text or "", server_tools=receipt.server_tools
            ),
            Message(role="user", content="And where?"),
        ]
        adapter_for(server, client).execute(make_request(messages=history))
        sent = seen(server).body["messages"][1]["content"]
    assert sent[:2] == [{**SEARCH, "input": SEARCH_INPUT}, WEB_TURN[2]]
    assert sent[2]["type"] == "text"


def test_server_tools_are_asked_for_and_a_type_anthropic_lacks_is_refused_before_a_request(
    client: httpx.Client,
) -> None:
    policy = {"server_tools": [{"type": "web_search", "max_uses": 3}, {"type": "code_execution"}]}
    with serving(json_reply(body(WEB_TURN))) as server:
        adapter_for(server, client).execute(make_request(OBJECT_SCHEMA, runtime_policy=policy))
        sent = seen(server).body
        asked = len(server.requests)
        with pytest.raises(PortError) as raised:
            adapter_for(server, client).execute(
                make_request(runtime_policy={"server_tools": [{"type": "file_search"}]})
            )
        assert len(server.requests) == asked  # refused before any request
        with pytest.raises(PortError) as malformed:
            adapter_for(server, client).execute(make_request(runtime_policy={"server_tools": "w"}))
    assert raised.value.code == ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED
    assert sent["tools"][1:] == [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        {"type": "code_execution_20250825", "name": "code_execution"},
    ]
    assert sent["tool_choice"] == {"type": "any"}  # the answer tool is not forced over them
    assert malformed.value.code == ErrorCode.DATA_INVALID


def test_streamed_text_around_the_search_is_progress_as_it_arrives(client: httpx.Client) -> None:
    outcome, _ = both_ways(client, WEB_TURN)
    assert "".join(e.text for e in outcome.events if isinstance(e, Delta)) == (
        "I'll search for that.Based on the results, he was born on April 30, 1916."
    )


_texts = st.text(alphabet="abcé 🌍.", min_size=1, max_size=12)


@st.composite
def _turns(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Text blocks (some cited), searches each with its result, in any order."""
    blocks: list[dict[str, Any]] = []
    for number in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            block: dict[str, Any] = {"type": "text", "text": draw(_texts)}
            if draw(st.booleans()):
                block["citations"] = [{**CITED, "cited_text": draw(_texts)}]
            blocks.append(block)
        else:
            call_id = f"srvtoolu_{number}"
            search = {**SEARCH, "id": call_id, "input": {"query": draw(_texts)}}
            blocks.append(search)
            result = {"type": "web_search_tool_result", "tool_use_id": call_id, "content": RESULTS}
            blocks.append(result)
    return blocks


@settings(
    deadline=None, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_turns())
def test_any_turn_reads_the_same_streamed_and_unstreamed(
    client: httpx.Client, blocks: list[dict[str, Any]]
) -> None:
    _, receipt = both_ways(client, blocks)
    said = [block for block in blocks if block["type"] == "text"]
    assert receipt.text == ("".join(block["text"] for block in said) or None)
    assert len(receipt.server_tools or []) == len(blocks) - len(said)
    starts = [start for start, block in _offsets(said) if "citations" in block]
    assert [citation.start for citation in receipt.citations or []] == starts


def _offsets(blocks: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    at, found = 0, []
    for block in blocks:
        found.append((at, block))
        at += len(block["text"])
    return found
