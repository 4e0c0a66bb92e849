"""Prompt-cache counts in usage over loopback (ADR 0051): chat ``prompt_tokens_details`` and
Responses ``input_tokens_details`` ``cached_tokens`` are ``Usage.cache_read_tokens``, a part of
``input_tokens``; streamed and unstreamed read the same; bad counts are coded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runport.conformance.loopback import json_reply, seen, serving, stream_reply
from runport.conformance.providers import make_request, run_streamed
from runport.contracts import ErrorCode, TextPart, Usage
from runport.contracts import Message as WireMessage
from runport.openai import OpenAIChatAdapter, OpenAIResponsesAdapter
from runport.ports import PortError

from .openai_upstream import completion, role_chunk, sse, text_chunk, usage_chunk
from .responses_wire import Message, Turn, response_body, stream_events

API_KEY = "sk-proj-cache-test-key"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


def _chat_usage(details: Any) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": 2048, "completion_tokens": 5, "total_tokens": 2053}
    if details is not None:
        usage["prompt_tokens_details"] = details
    return usage


def _chat(client: httpx.Client, usage: dict[str, Any], *, stream: bool) -> Usage | PortError:
    if stream:
        last = {**usage_chunk(), "usage": usage}
        body = sse([role_chunk(), text_chunk("hi"), last])
        handler = stream_reply([body])
    else:
        handler = json_reply({**completion("hi"), "usage": usage})
    with serving(handler) as server:
        adapter = OpenAIChatAdapter(
            base_url=server.base_url, model="m", api_key=API_KEY, http_client=client
        )
        if stream:
            outcome = run_streamed(adapter, make_request())
            if outcome.error is not None:
                return outcome.error
            assert outcome.receipt is not None
            return outcome.receipt.usage  # type: ignore[return-value]
        try:
            receipt = adapter.execute(make_request())
        except PortError as error:
            return error
        assert receipt.usage is not None
        return receipt.usage


def _responses(client: httpx.Client, usage: dict[str, Any], *, stream: bool) -> Usage | PortError:
    turn = Turn([Message(("hi",))], usage=usage)
    handler = stream_reply(stream_events(turn)) if stream else json_reply(response_body(turn))
    with serving(handler) as server:
        adapter = OpenAIResponsesAdapter(
            base_url=server.base_url, model="m", api_key=API_KEY, http_client=client
        )
        if stream:
            outcome = run_streamed(adapter, make_request())
            if outcome.error is not None:
                return outcome.error
            assert outcome.receipt is not None
            return outcome.receipt.usage  # type: ignore[return-value]
        try:
            receipt = adapter.execute(make_request())
        except PortError as error:
            return error
        assert receipt.usage is not None
        return receipt.usage


def _responses_usage(details: Any) -> dict[str, Any]:
    usage: dict[str, Any] = {"input_tokens": 2048, "output_tokens": 5, "total_tokens": 2053}
    if details is not None:
        usage["input_tokens_details"] = details
    return usage


PROTOCOLS = [
    pytest.param(_chat, _chat_usage, id="chat"),
    pytest.param(_responses, _responses_usage, id="responses"),
]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
@pytest.mark.parametrize(("play", "usage"), PROTOCOLS)
def test_cached_tokens_are_cache_reads_within_the_input(
    client: httpx.Client, play: Any, usage: Any, stream: bool
) -> None:
    got = play(client, usage({"cached_tokens": 1920}), stream=stream)
    assert got == Usage(input_tokens=2048, output_tokens=5, cache_read_tokens=1920)
    assert "cache_write_tokens" not in got.model_dump(mode="json")


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
@pytest.mark.parametrize(("play", "usage"), PROTOCOLS)
@pytest.mark.parametrize("details", [None, {}, {"cached_tokens": 0}, {"cached_tokens": None}])
def test_no_cache_reads_leave_usage_as_it_was(
    client: httpx.Client, play: Any, usage: Any, stream: bool, details: Any
) -> None:
    got = play(client, usage(details), stream=stream)
    assert got == Usage(input_tokens=2048, output_tokens=5)
    assert json.loads(got.model_dump_json()) == {"input_tokens": 2048, "output_tokens": 5}


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "unstreamed"])
@pytest.mark.parametrize(("play", "usage"), PROTOCOLS)
@pytest.mark.parametrize(
    "details",
    [
        {"cached_tokens": -1},
        {"cached_tokens": 1.5},
        {"cached_tokens": "9"},
        {"cached_tokens": 2049},
        [],
    ],
    ids=["negative", "fraction", "string", "more-than-input", "not-an-object"],
)
def test_bad_cache_counts_are_invalid_responses(
    client: httpx.Client, play: Any, usage: Any, stream: bool, details: Any
) -> None:
    got = play(client, usage(details), stream=stream)
    assert isinstance(got, PortError)
    assert got.code == ErrorCode.RUNTIME_INVALID_RESPONSE


def _sent_body(client: httpx.Client, adapter_class: Any, policy: dict[str, Any]) -> Any:
    reply = json_reply(completion("hi")) if adapter_class is OpenAIChatAdapter else None
    if reply is None:
        reply = json_reply(response_body(Turn([Message(("hi",))])))
    with serving(reply) as server:
        adapter = adapter_class(
            base_url=server.base_url, model="m", api_key=API_KEY, http_client=client
        )
        try:
            adapter.execute(make_request(runtime_policy=policy))
        except PortError as error:
            return error
        return seen(server).body


ADAPTERS = [
    pytest.param(OpenAIChatAdapter, id="chat"),
    pytest.param(OpenAIResponsesAdapter, id="responses"),
]


@pytest.mark.parametrize("adapter_class", ADAPTERS)
def test_a_cache_key_is_sent_as_prompt_cache_key(client: httpx.Client, adapter_class: Any) -> None:
    body = _sent_body(client, adapter_class, {"cache_key": "tenant-7"})
    assert body["prompt_cache_key"] == "tenant-7"
    assert "cache_key" not in body
    assert "prompt_cache_key" not in _sent_body(client, adapter_class, {})


@pytest.mark.parametrize("adapter_class", ADAPTERS)
@pytest.mark.parametrize("bad", ["", 7, ["k"]])
def test_a_bad_cache_key_is_refused_before_any_request(
    client: httpx.Client, adapter_class: Any, bad: Any
) -> None:
    got = _sent_body(client, adapter_class, {"cache_key": bad})
    assert isinstance(got, PortError)
    assert got.code == ErrorCode.DATA_INVALID


@pytest.mark.parametrize("adapter_class", ADAPTERS)
def test_a_breakpoint_sends_nothing_openai_caches_prefixes_itself(
    client: httpx.Client, adapter_class: Any
) -> None:
    reply = (
        json_reply(completion("hi"))
        if adapter_class is OpenAIChatAdapter
        else json_reply(response_body(Turn([Message(("hi",))])))
    )
    marked = [
        WireMessage(role="system", content=[TextPart(text="A manual.", cache=True)]),
        WireMessage(role="user", content="Long text.", cache=True, cache_ttl="1h"),
        WireMessage(role="user", content=[TextPart(text="Part.", cache=True), TextPart(text="Q")]),
    ]
    with serving(reply) as server:
        adapter = adapter_class(
            base_url=server.base_url, model="m", api_key=API_KEY, http_client=client
        )
        adapter.execute(make_request(messages=marked))
        body = seen(server).body
    assert "cache" not in json.dumps(body)
    assert all(word in json.dumps(body) for word in ("A manual.", "Long text.", "Part."))
