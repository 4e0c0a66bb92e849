"""What the Responses API did itself, over real HTTP on 127.0.0.1: built-in tool items are
``ServerToolCall``/``ServerToolResult``, an ``image_generation_call`` a generated file (its
``partial_image`` events previews), ``output_text`` annotations ``Citation``s, streamed and
unstreamed alike; an item of a kind the codec does not know is kept
(adr/0054-nothing-a-provider-sends-is-dropped.md, adr/0055-what-the-provider-did-itself.md).

The bodies are written here from the API reference's item and event shapes, each whole output
then cut into the events a stream sends."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import FaultServer, json_reply, seen, serving, stream_reply
from runport.conformance.providers import Provider, make_request, run_streamed
from runport.contracts import (
    Citation,
    CitationSource,
    ErrorCode,
    ExecutionReceipt,
    FileDelta,
    ServerToolCall,
    ServerToolResult,
)
from runport.openai import AsyncOpenAIResponsesAdapter, OpenAIResponsesAdapter
from runport.ports import PortError

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x07" * 32).decode()
PREVIEW = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x01" * 8).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\x03" * 16).decode()

SEARCH = {
    "id": "ws_67c9fa0502748190b7dd390736892e100be649c1a5ff9609",
    "type": "web_search_call",
    "status": "completed",
    "action": {"type": "search", "query": "positive news story today"},
}
ANSWER_TEXT = "As of today, March 9, 2025, one notable positive news story is that..."
CITE = {
    "type": "url_citation",
    "start_index": 44,
    "end_index": 70,
    "url": "https://www.example.com/positive-news?utm_source=openai",
    "title": "Positive News",
}
MESSAGE = {
    "id": "msg_67c9fa077e288190af08fdffda2e34f20be649c1a5ff9609",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "text": ANSWER_TEXT, "annotations": [CITE]}],
}


def response(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "gpt-test",
        "output": output,
        "usage": {"input_tokens": 9, "output_tokens": 4, "total_tokens": 13},
    }


STATUSED = ("web_search_call", "file_search_call", "code_interpreter_call", "mcp_call",
            "image_generation_call")  # fmt: skip


def frame(value: dict[str, Any]) -> bytes:
    return f"event: {value['type']}\ndata: {json.dumps(value)}\n\n".encode()


def stream(output: list[dict[str, Any]], previews: tuple[str, ...] = ()) -> list[bytes]:
    """``output`` as a stream: each item announced, its text in two deltas then its
    annotations, a provider-run item's status events, an image's previews, then the item
    whole; numbered events."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response([])}]
    for at, item in enumerate(output):
        opened = {key: value for key, value in item.items() if key not in ("content", "result")}
        if item["type"] == "message":
            opened["content"] = []
        events.append({"type": "response.output_item.added", "output_index": at, "item": opened})
        for index, part in enumerate(item.get("content", [])):
            base = {"item_id": item["id"], "output_index": at, "content_index": index}
            empty = {**part, "text": "", "annotations": []}
            events.append({"type": "response.content_part.added", **base, "part": empty})
            text = part["text"]
            for piece in (text[:10], text[10:]):
                events.append({"type": "response.output_text.delta", **base, "delta": piece})
            for number, note in enumerate(part["annotations"]):
                events.append(
                    {
                        "type": "response.output_text.annotation.added",
                        **base,
                        "annotation_index": number,
                        "annotation": note,
                    }
                )
        if item["type"] in STATUSED:  # how it is getting on, before it is done
            for status in ("in_progress", "completed"):
                events.append(
                    {"type": f"response.{item['type']}.{status}", "output_index": at,
                     "item_id": item["id"]}
                )  # fmt: skip
        if item["type"] == "image_generation_call":
            for number, preview in enumerate(previews):
                events.append(
                    {
                        "type": "response.image_generation_call.partial_image",
                        "item_id": item["id"],
                        "output_index": at,
                        "partial_image_index": number,
                        "partial_image_b64": preview,
                        "output_format": item.get("output_format", "png"),
                    }
                )
        events.append({"type": "response.output_item.done", "output_index": at, "item": item})
    events.append({"type": "response.completed", "response": response(output)})
    return [frame({**event, "sequence_number": n}) for n, event in enumerate(events)]


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


def adapter_for(server: FaultServer, client: httpx.Client) -> OpenAIResponsesAdapter:
    return OpenAIResponsesAdapter(
        base_url=server.base_url, model="gpt-test", api_key="sk-test", http_client=client
    )


def both_ways(
    client: httpx.Client, output: list[dict[str, Any]], previews: tuple[str, ...] = ()
) -> tuple[list[Any], ExecutionReceipt]:
    with serving(stream_reply(stream(output, previews)), json_reply(response(output))) as server:
        outcome = run_streamed(adapter_for(server, client), make_request())
        whole = adapter_for(server, client).execute(make_request())
    assert outcome.receipt is not None, outcome.error
    assert whole == outcome.receipt
    return outcome.events, whole


def refused(client: httpx.Client, output: list[dict[str, Any]], said: str) -> None:
    """``output`` streamed and whole: refused alike, an invalid response naming ``said``."""
    streamed, whole = stream_reply(stream(output)), json_reply(response(output))
    code = ErrorCode.RUNTIME_INVALID_RESPONSE
    provider = Provider(OpenAIResponsesAdapter, AsyncOpenAIResponsesAdapter, "gpt-test", "sk")
    provider.check_refused_both_ways(client, streamed, whole, code, said)


def test_a_web_search_and_its_url_citation_streamed_and_unstreamed(client: httpx.Client) -> None:
    events, receipt = both_ways(client, [SEARCH, MESSAGE])
    metadata = {"openai-responses": {"type": "web_search_call"}}
    assert receipt.server_tools == [
        ServerToolCall(
            call_id=SEARCH["id"], name="web_search", input={"action": SEARCH["action"]},
            provider_metadata=metadata,
        ),
        ServerToolResult(
            call_id=SEARCH["id"], name="web_search", output={"status": "completed"},
            provider_metadata=metadata,
        ),
    ]  # fmt: skip
    assert receipt.citations == [
        Citation(
            source=CitationSource(type="url", url=CITE["url"], title=CITE["title"]),
            start=44,
            end=70,
        )
    ]
    assert receipt.text == ANSWER_TEXT
    assert receipt.tool_calls is None
    kinds = [type(event).__name__ for event in events[:-1]]
    assert kinds == ["ServerToolCall", "ServerToolResult", "Delta", "Delta", "Citation"]


def test_a_citation_in_a_second_message_counts_from_where_its_part_begins(
    client: httpx.Client,
) -> None:
    first = {**MESSAGE, "id": "msg_a", "content": [{**MESSAGE["content"][0], "annotations": []}]}
    _, receipt = both_ways(client, [first, {**MESSAGE, "id": "msg_b"}])
    assert receipt.citations is not None
    cited = receipt.citations[0]
    assert (cited.start, cited.end) == (len(ANSWER_TEXT) + 44, len(ANSWER_TEXT) + 70)
    assert receipt.text is not None
    assert receipt.text[cited.start : cited.end] == ANSWER_TEXT[44:70]


def test_file_search_code_interpreter_and_mcp_calls(client: httpx.Client) -> None:
    files = {
        "id": "fs_1",
        "type": "file_search_call",
        "status": "completed",
        "queries": ["deep research"],
        "results": [{"file_id": "file-2dtbBZ", "filename": "deep.pdf", "score": 0.9}],
    }
    code = {
        "id": "ci_1",
        "type": "code_interpreter_call",
        "status": "completed",
        "code": "print(2 + 2)",
        "container_id": "cntr_1",
        "outputs": [{"type": "logs", "logs": "4\n"}],
    }
    mcp = {
        "id": "mcp_1",
        "type": "mcp_call",
        "name": "roll",
        "server_label": "dice",
        "arguments": '{"dice": "2d4+1"}',
        "output": "4",
        "error": None,
    }
    cited = {"type": "file_citation", "index": 3, "file_id": "file-2dtbBZ", "filename": "deep.pdf"}
    part = {"type": "output_text", "text": "It is 4.", "annotations": [cited]}
    message = {**MESSAGE, "content": [part]}
    _, receipt = both_ways(client, [files, code, mcp, message])
    tools = receipt.server_tools or []
    assert [(tool.kind, tool.name) for tool in tools] == [
        ("ServerToolCall", "file_search"), ("ServerToolResult", "file_search"),
        ("ServerToolCall", "code_interpreter"), ("ServerToolResult", "code_interpreter"),
        ("ServerToolCall", "roll"), ("ServerToolResult", "roll"),
    ]  # fmt: skip
    assert tools[2].input == {"code": "print(2 + 2)", "container_id": "cntr_1"}
    assert tools[3].output == {"status": "completed", "outputs": code["outputs"]}
    assert tools[4].input == {"dice": "2d4+1"}
    assert tools[5].output == "4"
    assert receipt.citations == [
        Citation(
            source=CitationSource(type="document", file_id="file-2dtbBZ", filename="deep.pdf"),
            start=3,
        )
    ]


def test_a_failed_mcp_call_is_a_result_with_its_error(client: httpx.Client) -> None:
    mcp = {"id": "mcp_2", "type": "mcp_call", "name": "roll", "arguments": "{}", "error": "boom"}
    _, receipt = both_ways(client, [mcp])
    assert receipt.server_tools is not None
    result = receipt.server_tools[1]
    assert isinstance(result, ServerToolResult)
    assert (result.error, result.output) == ("boom", None)


def test_a_generated_image_streams_its_previews_then_is_kept_whole(client: httpx.Client) -> None:
    image = {
        "id": "ig_1",
        "type": "image_generation_call",
        "status": "completed",
        "result": PNG,
        "revised_prompt": "A gray tabby cat",
    }
    events, receipt = both_ways(client, [image], previews=(PREVIEW, PREVIEW))
    files = [event for event in events if isinstance(event, FileDelta)]
    assert [(f.partial, f.data) for f in files] == [(True, PREVIEW), (True, PREVIEW), (False, PNG)]
    assert receipt.files is not None
    assert [(part.media_type, part.data) for part in receipt.files] == [("image/png", PNG)]
    assert receipt.text is None  # a turn whose only output is an image is not a blank answer


def test_an_image_whose_bytes_are_not_its_format_is_coded(client: httpx.Client) -> None:
    image = {"id": "ig_2", "type": "image_generation_call", "result": JPEG, "output_format": "png"}
    refused(client, [image], "image/jpeg")


def test_a_citation_past_the_text_is_coded(client: httpx.Client) -> None:
    wild = {**CITE, "start_index": 60, "end_index": 700}
    message = {**MESSAGE, "content": [{**MESSAGE["content"][0], "annotations": [wild]}]}
    refused(client, [message], "past the answer")


def test_a_huge_image_is_bounded_by_max_response_bytes(client: httpx.Client) -> None:
    image = {"id": "ig_3", "type": "image_generation_call", "result": PNG + "A" * 2_000_000}
    with serving(json_reply(response([image]))) as server:
        adapter = OpenAIResponsesAdapter(
            base_url=server.base_url,
            model="gpt-test",
            api_key="sk-test",
            http_client=client,
            max_response_bytes=1_000_000,
        )
        with pytest.raises(PortError) as raised:
            adapter.execute(make_request())
    assert raised.value.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE


def test_an_item_of_an_unknown_kind_is_kept_not_dropped(client: httpx.Client) -> None:
    novel = {"id": "lsh_1", "type": "local_shell_call", "action": {"command": ["ls"]}}
    _, receipt = both_ways(client, [novel])
    assert receipt.provider_metadata == {"openai-responses": {"unknown": [novel]}}


def test_server_tools_are_asked_for_as_built_in_tools(client: httpx.Client) -> None:
    policy = {"server_tools": [{"type": "web_search"}, {"type": "code_execution"}]}
    with serving(json_reply(response([MESSAGE]))) as server:
        adapter_for(server, client).execute(make_request(runtime_policy=policy))
        tools = seen(server).body["tools"]
        with pytest.raises(PortError) as raised:
            adapter_for(server, client).execute(
                make_request(runtime_policy={"server_tools": [{"type": "url_context"}]})
            )
    assert tools == [
        {"type": "web_search"},
        {"type": "code_interpreter", "container": {"type": "auto"}},
    ]
    assert raised.value.code == ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED


def test_a_status_event_before_the_response_is_created_is_still_an_event_that_came_first(
    client: httpx.Client,
) -> None:
    """The stream's hot path passes status events over only once the stream is under way:
    one that comes first still makes a later ``response.created`` out of order."""
    status = {"type": "response.web_search_call.in_progress", "output_index": 0, "item_id": "ws"}
    frames = [frame({**status, "sequence_number": 0}), *stream([SEARCH])[0:1]]
    frames[1] = frame({"type": "response.created", "response": response([]), "sequence_number": 1})
    with serving(stream_reply(frames)) as server:
        outcome = run_streamed(adapter_for(server, client), make_request())
    assert isinstance(outcome.error, PortError)
    assert outcome.error.code == ErrorCode.RUNTIME_INVALID_RESPONSE
    assert "response.created arrived after other events" in outcome.error.message
