"""A turn's end, per protocol, over real HTTP on 127.0.0.1 (adr/0050, docs/runs.md "per
finish"): each codec's finish reason normalised into ``ExecutionReceipt.finish`` (the word
kept in ``finish_reason``), and a run that never acts on a cut turn — no tool run, no
correction round (the loopback upstream is asked once) — nor takes a withheld answer, and that
continues Anthropic's ``pause_turn`` by sending the paused turn back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runport.anthropic import ANSWER_TOOL, AnthropicMessagesAdapter
from runport.application import RunError, execute_contract, run, run_stream
from runport.bedrock import BedrockConverseAdapter
from runport.conformance.eventstream import event_message
from runport.conformance.loopback import FaultServer, json_reply, seen, serving, stream_reply
from runport.contracts import ErrorCode
from runport.gemini import GeminiAdapter
from runport.openai import OpenAIChatAdapter, OpenAIResponsesAdapter

CONTRACT = (
    Path(__file__).parents[1] / "packages" / "application" / "tests" / "data" / "weather.yaml"
)
INPUTS = {"city": "Delft"}
CUT = '{"city": "Del'
ANSWER = {"city": "Delft", "celsius": 12.5}
ARGUMENTS = {"city": "Delft"}
CALLED: list[str] = []


def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    CALLED.append(city)
    return {"city": city, "celsius": 12.5}


# --- one turn's body per protocol: (text | None, call arguments | None, provider's word) --------


def chat(text: str | None, call: dict[str, Any] | None, word: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if call is not None:
        message["tool_calls"] = [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps(call)}}
        ]  # fmt: skip
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": word}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }


def chat_stream(text: str | None, call: dict[str, Any] | None, word: str) -> list[bytes]:
    delta: dict[str, Any] = {"role": "assistant", "content": text}
    if call is not None:
        delta["tool_calls"] = [
            {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps(call)}}
        ]  # fmt: skip
    chunks = [
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]},
        {"id": "c", "object": "chat.completion.chunk",
         "choices": [{"index": 0, "delta": {}, "finish_reason": word}]},
    ]  # fmt: skip
    return [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks] + [b"data: [DONE]\n\n"]


def responses(text: str | None, call: dict[str, Any] | None, word: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if text is not None:
        output.append(
            {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": text, "annotations": []}]}
        )  # fmt: skip
    if call is not None:
        output.append(
            {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1",
             "name": "get_weather", "arguments": json.dumps(call)}
        )  # fmt: skip
    body: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "status": "completed" if word == "completed" else "incomplete",
        "model": "m",
        "output": output,
        "usage": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12},
    }
    if word != "completed":
        body["incomplete_details"] = {"reason": word}
    return body


def anthropic(text: str | None, call: dict[str, Any] | None, word: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text is not None:
        # the contract is structured: its answer comes as the forced answer tool's input
        try:
            content.append(
                {
                    "type": "tool_use",
                    "id": "toolu_a",
                    "name": ANSWER_TOOL,
                    "input": json.loads(text),
                }
            )
        except ValueError:
            content.append({"type": "text", "text": text})
    if call is not None:
        content.append({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": call})
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": content,
        "stop_reason": word,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 7},
    }


def gemini(text: str | None, call: dict[str, Any] | None, word: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"text": text})
    if call is not None:
        parts.append({"functionCall": {"name": "get_weather", "args": call}})
    candidate: dict[str, Any] = {"index": 0, "finishReason": word}
    if parts:
        candidate["content"] = {"role": "model", "parts": parts}
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 7, "totalTokenCount": 12},
    }


def converse(text: str | None, call: dict[str, Any] | None, word: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"text": text})
    if call is not None:
        content.append({"toolUse": {"toolUseId": "tu_1", "name": "get_weather", "input": call}})
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": word,
        "usage": {"inputTokens": 5, "outputTokens": 7, "totalTokens": 12},
        "metrics": {"latencyMs": 1},
    }


def converse_stream(text: str | None, call: dict[str, Any] | None, word: str) -> list[bytes]:
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    if text is not None:
        events.append(("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}}))
    if call is not None:
        start = {"toolUse": {"toolUseId": "tu_1", "name": "get_weather"}}
        delta = {"toolUse": {"input": json.dumps(call)}}
        events.append(("contentBlockStart", {"contentBlockIndex": 1, "start": start}))
        events.append(("contentBlockDelta", {"contentBlockIndex": 1, "delta": delta}))
    events.append(("messageStop", {"stopReason": word}))
    return [event_message(kind, payload) for kind, payload in events]


Body = Callable[[str | None, dict[str, Any] | None, str], Any]


class Protocol:
    def __init__(
        self,
        name: str,
        body: Body,
        make: Callable[[str], Any],
        words: dict[str, str],
        stream: Callable[..., list[bytes]] | None = None,
    ) -> None:
        self.name, self.body, self.make, self.words, self.stream = name, body, make, words, stream

    def __repr__(self) -> str:
        return self.name


PROTOCOLS = [
    Protocol(
        "openai-chat",
        chat,
        lambda url: OpenAIChatAdapter(base_url=url, model="m", api_key="sk-test"),
        {"stop": "stop", "length": "length", "content_filter": "content_filter"},
        chat_stream,
    ),
    Protocol(
        "openai-responses",
        responses,
        lambda url: OpenAIResponsesAdapter(base_url=url, model="m", api_key="sk-test"),
        {"stop": "completed", "length": "max_output_tokens", "content_filter": "content_filter"},
    ),
    Protocol(
        "anthropic",
        anthropic,
        lambda url: AnthropicMessagesAdapter(
            base_url=url.removesuffix("/v1"), model="m", api_key="sk-ant-test"
        ),
        {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"},
    ),
    Protocol(
        "gemini",
        gemini,
        lambda url: GeminiAdapter(base_url=url.removesuffix("/v1"), model="m", api_key="g-test"),
        {"stop": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"},
    ),
    Protocol(
        "bedrock-converse",
        converse,
        lambda url: BedrockConverseAdapter(
            base_url=url.removesuffix("/v1"), model="m", api_key="bedrock-test"
        ),
        {"stop": "end_turn", "length": "max_tokens", "content_filter": "content_filtered"},
        converse_stream,
    ),
]


def _run(protocol: Protocol, *turns: Any, streamed: bool = False) -> tuple[Any, FaultServer]:
    if streamed:
        assert protocol.stream is not None
        handlers = [stream_reply(protocol.stream(*turn)) for turn in turns]
    else:
        handlers = [json_reply(protocol.body(*turn)) for turn in turns]
    CALLED.clear()
    with serving(*handlers) as server, protocol.make(server.base_url) as adapter:
        try:
            if streamed:
                outcome: Any = run_stream(
                    CONTRACT, adapter, inputs=INPUTS, tools=[get_weather], on_event=lambda e: None
                )
            else:
                outcome = run(CONTRACT, adapter, inputs=INPUTS, tools=[get_weather])
        except RunError as error:
            outcome = error
        return outcome, server


def _streamings(protocol: Protocol) -> list[bool]:
    return [False, True] if protocol.stream is not None else [False]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=repr)
def test_a_cut_structured_answer_is_truncated_and_asked_for_once(protocol: Protocol) -> None:
    for streamed in _streamings(protocol):
        cut = (CUT, None, protocol.words["length"])
        fine = (json.dumps(ANSWER), None, protocol.words["stop"])
        error, server = _run(protocol, cut, fine, streamed=streamed)
        assert isinstance(error, RunError), error
        assert (error.code, error.stage) == (ErrorCode.OUTPUT_TRUNCATED, "model")
        assert len(server.requests) == 1  # no correction round
        [receipt] = error.partial.receipts
        assert receipt.finish == "length"
        assert receipt.finish_reason == (
            "length" if protocol.name == "openai-responses" else protocol.words["length"]
        )


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=repr)
def test_a_cut_turn_s_tool_call_is_never_run_though_its_arguments_parse(
    protocol: Protocol,
) -> None:
    for streamed in _streamings(protocol):
        cut = (None, ARGUMENTS, protocol.words["length"])
        fine = (json.dumps(ANSWER), None, protocol.words["stop"])
        error, server = _run(protocol, cut, fine, streamed=streamed)
        assert isinstance(error, RunError), error
        assert error.code == ErrorCode.OUTPUT_TRUNCATED
        [receipt] = error.partial.receipts
        assert receipt.tool_calls is not None
        assert receipt.tool_calls[0].arguments == ARGUMENTS
        assert CALLED == []
        assert len(server.requests) == 1


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=repr)
def test_a_withheld_answer_is_refused(protocol: Protocol) -> None:
    for streamed in _streamings(protocol):
        refused = (None, None, protocol.words["content_filter"])
        error, _server = _run(protocol, refused, streamed=streamed)
        assert isinstance(error, RunError), error
        assert (error.code, error.stage) == (ErrorCode.OUTPUT_REFUSED, "model")
        assert error.partial.receipts[0].finish == "content_filter"


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=repr)
def test_an_ordinary_answer_is_unchanged_and_a_word_no_table_knows_is_other(
    protocol: Protocol,
) -> None:
    result, _ = _run(protocol, (json.dumps(ANSWER), None, protocol.words["stop"]))
    assert result.output == ANSWER
    assert result.receipts[-1].finish == "stop"
    if protocol.name == "openai-responses":
        return  # its finish reason is runport's own word (an unknown one is not possible)
    result, _ = _run(protocol, (json.dumps(ANSWER), None, "NEW_REASON"))
    assert result.output == ANSWER
    [receipt] = result.receipts
    assert (receipt.finish, receipt.finish_reason) == ("other", "NEW_REASON")


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=repr)
def test_execute_contract_names_the_cut_not_the_schema(protocol: Protocol) -> None:
    reply = json_reply(protocol.body(CUT, None, protocol.words["length"]))
    with serving(reply) as server, protocol.make(server.base_url) as adapter:
        envelope = execute_contract(CONTRACT, adapter, inputs=INPUTS)
    assert [d.code for d in envelope.diagnostics] == [ErrorCode.OUTPUT_TRUNCATED]
    assert not envelope.ok
    assert envelope.result is not None


def test_anthropic_pause_turn_is_sent_back_and_continued() -> None:
    [protocol] = [p for p in PROTOCOLS if p.name == "anthropic"]
    paused = (None, None, "pause_turn")
    paused_body = protocol.body(*paused)
    paused_body["content"] = [{"type": "text", "text": "Let me look that up."}]
    handlers = [
        json_reply(paused_body),
        json_reply(protocol.body(json.dumps(ANSWER), None, "end_turn")),
    ]
    with serving(*handlers) as server, protocol.make(server.base_url) as adapter:
        result = run(CONTRACT, adapter, inputs=INPUTS)
        second = seen(server, 1).body
    assert result.output == ANSWER
    assert [r.finish for r in result.receipts] == ["pause", "stop"]
    assert second["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Let me look that up."}],
    }


def test_anthropic_pause_turn_forever_is_bounded_by_max_turns() -> None:
    [protocol] = [p for p in PROTOCOLS if p.name == "anthropic"]
    body = protocol.body(None, None, "pause_turn")
    body["content"] = [{"type": "text", "text": "Still looking."}]
    with serving(*[json_reply(body)] * 3) as server, protocol.make(server.base_url) as adapter:
        with pytest.raises(RunError) as raised:
            run(CONTRACT, adapter, inputs=INPUTS, max_turns=3)
        assert len(server.requests) == 3
    assert raised.value.code == ErrorCode.RUN_TURNS_EXHAUSTED


def test_an_openai_chat_refusal_is_refused_whatever_word_ends_it() -> None:
    body = chat(None, None, "stop")
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    with (
        serving(json_reply(body)) as server,
        PROTOCOLS[0].make(server.base_url) as adapter,
        pytest.raises(RunError) as raised,
    ):
        run(CONTRACT, adapter, inputs=INPUTS)
    assert raised.value.code == ErrorCode.OUTPUT_REFUSED
    [receipt] = raised.value.partial.receipts
    assert (receipt.finish, receipt.finish_reason) == ("content_filter", "stop")
    assert receipt.text == "I can't help with that."
