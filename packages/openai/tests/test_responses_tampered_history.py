"""A turn's ``encrypted_content`` altered before it goes back: runport sends it as it was given
(it cannot check what only the provider can decrypt), and the provider's refusal is a stable
``TQX_RUNTIME_PERMANENT`` (sending the same history again fails the same way, so nothing
retries it) that keeps the provider's own message, whether the refusal comes as the 400 answer
or as an ``error`` event in a stream (adr/0055-what-the-provider-did-itself.md).

The refusal is written here in the shape OpenAI answers it, as users reported it publicly
(openai/codex issues 8119 and 8145; continuedev/continue issue 10643): HTTP 400 with
``{"error": {"message": "The encrypted content for item rs_… could not be verified. Reason: …",
"type": "invalid_request_error", "param": null, "code": "invalid_encrypted_content"}}``; in a
stream (where the SDK raises it from the ``error`` event) the same ``code`` and ``message`` as
the event's own fields."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from runport.conformance.loopback import json_reply, seen, serving, stream_reply
from runport.conformance.providers import make_request, run_streamed
from runport.contracts import ErrorCode, Message, ReasoningPart
from runport.openai import OpenAIResponsesAdapter
from runport.ports import PortError

ITEM = "rs_0b2c4d6e8f0a1b3c5d7e9f"
GIVEN = "gAAAAABpZ0Q1X2VuY3J5cHRlZC1yZWFzb25pbmctYmxvYg=="
TAMPERED = GIVEN[:20] + "X" + GIVEN[21:]
SAID = (
    f"The encrypted content for item {ITEM} could not be verified. "
    "Reason: Encrypted content could not be decrypted or parsed."
)
REFUSAL = {
    "error": {
        "message": SAID,
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_encrypted_content",
    }
}
STREAMED = {"type": "error", "sequence_number": 0, "code": "invalid_encrypted_content",
            "message": SAID, "param": None}  # fmt: skip


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


def history() -> list[Message]:
    thought = ReasoningPart(
        text="Check the date first.",
        provider_metadata={"openai-responses": {"id": ITEM, "encrypted_content": TAMPERED}},
    )
    return [
        Message(role="user", content="What day is it?"),
        Message(role="assistant", content="Tuesday.", reasoning=[thought]),
        Message(role="user", content="And tomorrow?"),
    ]


def refused(error: BaseException | None) -> PortError:
    assert isinstance(error, PortError)
    assert error.code == ErrorCode.RUNTIME_PERMANENT
    # the provider's words kept; the item id, shaped like a key, is redacted as every such run
    # of a provider's message is (docs/upstream-safety.md)
    kept = SAID.replace(ITEM, "[redacted]")
    assert error.message.endswith(kept)
    assert error.retry_after_ms is None
    return error


def test_the_400_for_tampered_content_is_permanent_with_the_providers_message(
    client: httpx.Client,
) -> None:
    request = make_request(messages=history())
    answer = json_reply(REFUSAL, status="400 Bad Request")
    with serving(answer, answer) as server:
        adapter = OpenAIResponsesAdapter(
            base_url=server.base_url, model="gpt-test", api_key="sk-test", http_client=client
        )
        with pytest.raises(PortError) as raised:
            adapter.execute(request)
        sent = seen(server).body
        outcome = run_streamed(adapter, request)
    error = refused(raised.value)
    assert "400" in error.message
    refused(outcome.error)
    assert outcome.receipt is None
    # what went up is the content as the caller gave it, altered byte included
    reasoning = [item for item in sent["input"] if item["type"] == "reasoning"]
    assert reasoning == [
        {
            "type": "reasoning",
            "id": ITEM,
            "summary": [{"type": "summary_text", "text": "Check the date first."}],
            "encrypted_content": TAMPERED,
        }
    ]


def test_the_same_refusal_as_a_stream_error_event_is_coded_alike(client: httpx.Client) -> None:
    frame = f"event: error\ndata: {json.dumps(STREAMED)}\n\n".encode()
    with serving(stream_reply([frame])) as server:
        adapter = OpenAIResponsesAdapter(
            base_url=server.base_url, model="gpt-test", api_key="sk-test", http_client=client
        )
        outcome = run_streamed(adapter, make_request(messages=history()))
    refused(outcome.error)
    assert outcome.receipt is None
