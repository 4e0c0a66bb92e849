"""What servers that speak chat completions differently are sent and read: ``include_usage``
(Mistral answers 422 to ``stream_options``), Mistral's tool-call id rule on the ids sent back,
Groq's usage in ``x_groq.usage``, and a 429 that is a spent quota (the codec's own
classification of an error status, ``Codec.error_code``)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance.providers import make_request, run_streamed
from runport.contracts import ErrorCode, Message, ToolCall
from runport.openai import OpenAIChatAdapter, create_adapter
from runport.openai._request import sent_call_id
from runport.ports import PortError

from .openai_upstream import (
    ChunkedBody,
    LoopbackUpstream,
    Recorded,
    Reply,
    finish_chunk,
    role_chunk,
    sse,
    text_chunk,
    usage_chunk,
)

HELLO = [role_chunk(), text_chunk("Hello"), finish_chunk(), usage_chunk(7, 3)]


def streamed_body(base_url: str, **keywords: Any) -> dict[str, Any]:
    """The body ``execute_streaming`` posts to ``base_url`` (served in memory: nothing
    leaves the machine, whatever host ``base_url`` names)."""
    transport = ChunkedBody([sse(HELLO)])
    with httpx.Client(transport=transport) as client:
        adapter = OpenAIChatAdapter(base_url=base_url, model="m", http_client=client, **keywords)
        adapter.execute_streaming(make_request(), lambda event: None)
    body: dict[str, Any] = transport.bodies[0]
    return body


@pytest.fixture
def named_hosts_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests to a provider's own host name, answered in memory: allowed past the model
    request guard (as ``@pytest.mark.allow_model_requests`` would, where runport.testing is
    installed; this package's own tests run without it)."""
    monkeypatch.setenv("RUNPORT_ALLOW_MODEL_REQUESTS", "1")


@pytest.mark.usefixtures("named_hosts_allowed")  # served in memory: nothing is sent
@pytest.mark.parametrize(
    ("base_url", "keywords", "sent"),
    [
        ("https://api.openai.com/v1", {}, True),
        ("https://api.openai.com/v1", {"include_usage": False}, False),
        ("https://api.mistral.ai/v1", {}, False),
        ("https://api.mistral.ai/v1", {"include_usage": True}, True),
        ("https://api.groq.com/openai/v1", {}, True),
        ("http://127.0.0.1:8080/v1", {"include_usage": "false"}, False),
    ],
)
def test_stream_options_are_sent_unless_turned_off_or_the_server_refuses_them(
    base_url: str, keywords: dict[str, Any], sent: bool
) -> None:
    body = streamed_body(base_url, **keywords)
    assert ("stream_options" in body) is sent
    if sent:
        assert body["stream_options"] == {"include_usage": True}


def test_include_usage_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNPORT_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RUNPORT_OPENAI_MODEL", "m")
    monkeypatch.setenv("RUNPORT_OPENAI_INCLUDE_USAGE", "off")
    assert create_adapter()._codec.include_usage is False  # type: ignore[attr-defined]
    monkeypatch.setenv("RUNPORT_OPENAI_INCLUDE_USAGE", "maybe")
    with pytest.raises(ValueError, match="include_usage must be true or false"):
        create_adapter()


# --- Mistral's tool-call ids ------------------------------------------------------------------

_NINE = re.compile(r"[A-Za-z0-9]{9}")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60))
def test_mistral_ids_are_nine_alphanumerics_one_per_id(first: str, second: str) -> None:
    one, two = sent_call_id(first, "nine_alphanumerics"), sent_call_id(second, "nine_alphanumerics")
    assert _NINE.fullmatch(one)
    assert _NINE.fullmatch(two)
    assert one == sent_call_id(first, "nine_alphanumerics")  # the same id, the same answer
    assert (one == two) == (first == second)
    if _NINE.fullmatch(first):
        assert one == first  # an id that keeps the rule goes back as it came
    assert sent_call_id(first, "any") == first


def _tool_turns(*ids: str) -> list[Message]:
    calls = [ToolCall(call_id=i, name="get_weather", arguments={"city": "Oslo"}) for i in ids]
    answers = [Message(role="tool", content="sunny", tool_call_id=i) for i in ids]
    return [
        Message(role="user", content="Weather?"),
        Message(role="assistant", content="", tool_calls=calls),
        *answers,
    ]


class MistralRules(LoopbackUpstream):
    """A loopback server that refuses what Mistral's API refuses, with its bodies: a
    ``stream_options`` field (422), a tool-call id that is not nine letters and digits (400);
    else it answers with the next queued reply."""

    def _take(self, recorded: Recorded) -> Reply | None:
        body = recorded.body
        refused = self.refusal(body) if type(body) is dict else None
        if refused is None:
            return super()._take(recorded)
        with self._lock:
            self.requests.append(recorded)
            self._active += 1
        return refused

    def refusal(self, body: dict[str, Any]) -> Reply | None:
        if "stream_options" in body:
            detail = {
                "type": "extra_forbidden",
                "loc": ["body", "stream_options"],
                "msg": "Extra inputs are not permitted",
                "input": {"include_usage": True},
            }
            return Reply.json(
                {
                    "object": "error",
                    "message": {"detail": [detail]},
                    "type": "invalid_request_message_error",
                    "param": None,
                    "code": None,
                },
                status=422,
            )
        for message in body["messages"]:
            ids = [call["id"] for call in message.get("tool_calls", [])]
            ids += [message["tool_call_id"]] if "tool_call_id" in message else []
            for call_id in ids:
                if not _NINE.fullmatch(call_id):
                    text = (
                        f"Tool call id was {call_id} but must be a-z, A-Z, 0-9, with a length of 9."
                    )
                    return Reply.json(
                        {
                            "object": "error",
                            "message": text,
                            "type": "invalid_request_message_error",
                            "param": None,
                            "code": "3280",
                        },
                        status=400,
                    )
        return None


@pytest.fixture
def mistral() -> Any:
    server = MistralRules()
    yield server
    server.close()


def test_the_mistral_emulation_refuses_both(mistral: MistralRules) -> None:
    """The premise: today's request, with an OpenAI call id sent back, is refused."""
    for body in (
        {"stream_options": {}, "messages": []},
        {"messages": [{"role": "tool", "tool_call_id": "call_0", "content": ""}]},
    ):
        assert mistral.refusal(body) is not None
    assert mistral.refusal({"messages": [{"role": "tool", "tool_call_id": "Ab3dE6gH9"}]}) is None


def test_mistral_takes_the_turns_sent_back_with_nine_alphanumeric_ids(
    mistral: MistralRules,
) -> None:
    adapter = OpenAIChatAdapter(
        base_url=mistral.base_url,
        model="mistral-small-latest",
        include_usage=False,
        call_ids="nine_alphanumerics",
    )
    request = make_request(messages=_tool_turns("call_Xq2", "Ab3dE6gH9"))
    mistral.queue(Reply([sse(HELLO)]), Reply([sse(HELLO)]))
    with adapter:
        first = adapter.execute_streaming(request, lambda event: None)
    assert first.text == "Hello"
    (sent,) = mistral.requests
    assert mistral.refusal(sent.body) is None
    calls = sent.body["messages"][1]["tool_calls"]
    answers = [message["tool_call_id"] for message in sent.body["messages"][2:]]
    assert [call["id"] for call in calls] == answers
    assert answers[1] == "Ab3dE6gH9"
    plain = OpenAIChatAdapter(base_url=mistral.base_url, model="mistral-small-latest")
    with plain, pytest.raises(PortError) as raised:
        plain.execute_streaming(request, lambda event: None)
    assert raised.value.code == ErrorCode.RUNTIME_PERMANENT
    assert "HTTP 422" in raised.value.message


@pytest.mark.usefixtures("named_hosts_allowed")  # served in memory, as above
def test_a_mistral_host_gets_its_call_id_rule_unasked() -> None:
    transport = ChunkedBody([sse(HELLO)])
    with httpx.Client(transport=transport) as client:
        adapter = OpenAIChatAdapter(
            base_url="https://api.mistral.ai/v1", model="m", http_client=client
        )
        adapter.execute_streaming(make_request(messages=_tool_turns("call_0")), lambda e: None)
    (sent,) = transport.bodies
    assert _NINE.fullmatch(sent["messages"][2]["tool_call_id"])
    assert sent["messages"][1]["tool_calls"][0]["id"] == sent["messages"][2]["tool_call_id"]
    assert "stream_options" not in sent


# --- Groq's usage -----------------------------------------------------------------------------


def test_groq_usage_in_x_groq_is_read(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter
) -> None:
    last = finish_chunk()
    last["x_groq"] = {
        "id": "req_01jbd6g2qdfw2adyrt2az8hz4w",
        "usage": {
            "queue_time": 0.000_31,
            "prompt_tokens": 18,
            "prompt_time": 0.000_93,
            "completion_tokens": 5,
            "completion_time": 0.004,
            "total_tokens": 23,
            "total_time": 0.005,
        },
    }
    first = role_chunk()
    first["x_groq"] = {"id": "req_01jbd6g2qdfw2adyrt2az8hz4w"}
    upstream.queue(Reply([sse([first, text_chunk("Hello"), last])]))
    receipt = run_streamed(adapter, make_request()).receipt
    assert receipt.usage is not None
    assert (receipt.usage.input_tokens, receipt.usage.output_tokens) == (18, 5)


# --- a spent quota is not a throttle ----------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (
            {
                "message": "You exceeded your current quota, please check your plan and billing "
                "details.",
                "type": "insufficient_quota",
                "param": None,
                "code": "insufficient_quota",
            },
            ErrorCode.RUNTIME_PERMANENT,
        ),
        (
            {
                "message": "Rate limit reached for gpt-4o-mini on requests per min (RPM).",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            },
            ErrorCode.RUNTIME_RATE_LIMITED,
        ),
    ],
)
def test_a_429_for_a_spent_quota_is_permanent(
    upstream: LoopbackUpstream, adapter: OpenAIChatAdapter, error: dict[str, Any], code: ErrorCode
) -> None:
    upstream.queue(Reply.json({"error": error}, status=429, headers={"Retry-After": "20"}))
    with pytest.raises(PortError) as raised:
        adapter.execute(make_request())
    assert raised.value.code == code
    assert "HTTP 429" in raised.value.message
    assert raised.value.message.endswith(error["message"])
