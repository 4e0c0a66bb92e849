"""For the same bytes from the suite's emulation of an Azure OpenAI resource
(``azure-openai-chat``: the deployment path, ``api-version``, the ``api-key`` it checks, Azure's
content-filter chunks), the receipt agrees with what the official ``openai.AzureOpenAI``
client reads — text, tool calls, finish reason and usage — streamed and unstreamed.

The SDK is read in its plain loop over chunks, a choice without a ``delta`` skipped: its
``chat.completions.stream`` helper (openai 3.57) stops with an ``AttributeError`` on Azure's
content-filter offsets chunk, a choice with no ``delta``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from runport.conformance import CASES, PROTOCOLS, ScriptedUpstream
from runport.conformance.providers import WEATHER, make_request, run_streamed
from runport.openai import DEFAULT_AZURE_API_VERSION, AzureOpenAIChatAdapter

AzureOpenAIChat: Any = type(PROTOCOLS["azure-openai-chat"])
KEY = "azure-key-differential-5c1d"
DEPLOYMENT = "gpt-4o-prod"
PROMPT = [{"role": "user", "content": "hi"}]
NAMES = [
    "plain_text",
    "one_tool_call",
    "three_tool_calls",
    "cache_usage",
    "incomplete_length",
    "refused",
]
"""Text over several chunks, calls (one; three interleaved, one without an id), cached
prompt tokens, and the finish reasons ``stop``, ``tool_calls``, ``length`` and
``content_filter``."""


@pytest.fixture(scope="module")
def clients() -> Iterator[tuple[httpx.Client, Any]]:
    """runport's client and the SDK's, for the module (each is slow to make)."""
    with httpx.Client() as ours, openai.DefaultHttpxClient() as theirs:
        yield ours, theirs


def upstream_for(name: str) -> ScriptedUpstream:
    """An Azure resource that answers two requests with the case's bytes."""
    case = next(case for case in CASES if case.name == name)
    protocol = AzureOpenAIChat(api_keys=(KEY,))
    return ScriptedUpstream([case, case], pacing="off", protocol=protocol)


def adapter_for(upstream: ScriptedUpstream, http: httpx.Client) -> AzureOpenAIChatAdapter:
    return AzureOpenAIChatAdapter(
        base_url=upstream.base_url, model=DEPLOYMENT, api_key=KEY, http_client=http
    )


def sdk_for(upstream: ScriptedUpstream, http: Any) -> Any:
    return openai.AzureOpenAI(
        azure_endpoint=upstream.base_url,
        api_key=KEY,
        api_version=DEFAULT_AZURE_API_VERSION,
        max_retries=0,
        http_client=http,
    )


def receipt_view(receipt: Any) -> dict[str, Any]:
    usage = receipt.usage
    return {
        "text": receipt.text,
        "calls": [(c.call_id, c.name, c.arguments) for c in receipt.tool_calls or []],
        "finish": receipt.finish_reason,
        "usage": None
        if usage is None
        else (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
        ),
    }


def sdk_view(text: str, calls: dict[int, list[Any]], finish: Any, usage: Any) -> dict[str, Any]:
    """What the SDK read, in the receipt's terms: a call the stream gave no id is known by
    its index (``call_{index}``, runport's documented rule), arguments parsed."""
    cached = usage and usage.prompt_tokens_details and usage.prompt_tokens_details.cached_tokens
    return {
        "text": text or None,
        "calls": [
            (call_id or f"call_{index}", name, json.loads(arguments or "{}"))
            for index, (call_id, name, arguments) in sorted(calls.items())
        ],
        "finish": finish,
        "usage": None
        if usage is None
        else (usage.prompt_tokens, usage.completion_tokens, cached or None),
    }


def sdk_stream(client: Any) -> dict[str, Any]:
    text, calls, finish, usage = "", {}, None, None
    for chunk in client.chat.completions.create(
        model=DEPLOYMENT, messages=PROMPT, stream=True, stream_options={"include_usage": True}
    ):
        usage = chunk.usage or usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            if choice.delta is None:  # Azure's content-filter offsets
                continue
            text += choice.delta.content or ""
            for piece in choice.delta.tool_calls or []:
                call = calls.setdefault(piece.index, [None, None, ""])
                call[0] = call[0] or piece.id
                if piece.function is not None:
                    call[1] = call[1] or piece.function.name
                    call[2] += piece.function.arguments or ""
    return sdk_view(text, calls, finish, usage)


def sdk_answer(client: Any) -> dict[str, Any]:
    completion = client.chat.completions.create(model=DEPLOYMENT, messages=PROMPT)
    [choice] = completion.choices
    message = choice.message
    calls = {
        index: [call.id, call.function.name, call.function.arguments]
        for index, call in enumerate(message.tool_calls or [])
    }
    return sdk_view(message.content or "", calls, choice.finish_reason, completion.usage)


@pytest.mark.parametrize("name", NAMES)
def test_the_stream_agrees_with_azure_openai(clients: tuple[httpx.Client, Any], name: str) -> None:
    ours, theirs = clients
    upstream = upstream_for(name)
    try:
        outcome = run_streamed(adapter_for(upstream, ours), make_request(tools=[WEATHER]))
        assert outcome.receipt is not None, outcome.error
        assert receipt_view(outcome.receipt) == sdk_stream(sdk_for(upstream, theirs))
        first, second = upstream.requests
    finally:
        upstream.close()
    assert first.path == second.path  # the same deployment, the same api-version
    assert first.headers["api-key"] == second.headers["api-key"] == KEY


@pytest.mark.parametrize("name", ["plain_text", "three_tool_calls", "cache_usage"])
def test_the_answer_agrees_with_azure_openai(clients: tuple[httpx.Client, Any], name: str) -> None:
    ours, theirs = clients
    upstream = upstream_for(name)
    try:
        receipt = adapter_for(upstream, ours).execute(make_request(tools=[WEATHER]))
        assert receipt_view(receipt) == sdk_answer(sdk_for(upstream, theirs))
        assert [request.stream for request in upstream.requests] == [False, False]
    finally:
        upstream.close()
