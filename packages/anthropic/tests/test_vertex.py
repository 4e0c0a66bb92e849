"""Claude on Vertex AI: the project/location URL with ``:streamRawPredict`` / ``:rawPredict``,
``anthropic_version`` in the body and no ``model``, no key header, OAuth tokens from
google-auth, and the ``vertex-anthropic`` entry point — against runport.conformance's loopback
Vertex AI, which checks what Vertex AI checks."""

from __future__ import annotations

import json

import pytest

from runport.anthropic import AnthropicMessagesAdapter, create_vertex_adapter
from runport.conformance.providers import make_request, run_streamed
from runport.conformance.vertex import VertexEmulation
from runport.http import GoogleAuth

from .anthropic_wire import Text, Turn, message_body, stream_events

TURN = Turn([Text(["Hello from ", "Vertex"])])
STREAM = ("text/event-stream", b"".join(stream_events(TURN)))
PLAIN = ("application/json", json.dumps(message_body(TURN)).encode())
MODEL = "claude-sonnet-4@20250514"
PROJECT = "my-project-1"


def test_claude_is_posted_raw_to_the_project_s_location_with_the_version_in_the_body() -> None:
    with VertexEmulation([STREAM, PLAIN]) as vertex:
        adapter = AnthropicMessagesAdapter(
            model=MODEL,
            base_url=vertex.base_url,
            project=PROJECT,
            location="us-east5",
            auth=GoogleAuth(vertex.credentials()),
        )
        with adapter:
            streamed = run_streamed(adapter, make_request())
            plain = adapter.execute(make_request())
    assert vertex.refused == []
    assert streamed.receipt is not None
    assert streamed.receipt.text == "Hello from Vertex" == plain.text
    first, second = vertex.requests
    assert first.path == (
        "/v1/projects/my-project-1/locations/us-east5/publishers/anthropic/models/"
        "claude-sonnet-4@20250514:streamRawPredict"
    )
    assert second.verb == "rawPredict"
    assert first.body["anthropic_version"] == "vertex-2023-10-16"
    assert "model" not in first.body
    assert first.body["stream"] is True
    assert "x-api-key" not in first.headers
    assert "anthropic-version" not in first.headers
    assert vertex.tokens_issued == 1


def test_the_entry_point_reads_vertex_s_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    with VertexEmulation([STREAM]) as vertex:
        monkeypatch.setenv("RUNPORT_VERTEX_ANTHROPIC_MODEL", MODEL)
        monkeypatch.setenv("RUNPORT_VERTEX_ANTHROPIC_BASE_URL", vertex.base_url)
        monkeypatch.setenv("RUNPORT_VERTEX_PROJECT", PROJECT)
        monkeypatch.setenv("RUNPORT_VERTEX_LOCATION", "europe-west1")
        credentials = vertex.credentials()
        # the entry point signs with google-auth's default credentials: here, the emulation's
        monkeypatch.setattr("google.auth.default", lambda scopes: (credentials, PROJECT))
        with create_vertex_adapter() as adapter:
            outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    [request] = vertex.requests
    assert request.location == "europe-west1"
    assert request.model == MODEL


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"project": PROJECT, "model": "claude/../../x"}, "Claude model on Vertex AI"),
        ({"project": PROJECT, "api_key": "k"}, "not an api_key"),
        ({"location": "us-east5"}, "location needs a project"),
        ({"vertex": True}, "need a project"),
    ],
)
def test_vertex_keywords_that_cannot_work_are_refused(
    keywords: dict[str, object], says: str
) -> None:
    given: dict[str, object] = {"model": MODEL, "auth": GoogleAuth(object()), **keywords}
    with pytest.raises(ValueError, match=says):
        AnthropicMessagesAdapter(**given)  # type: ignore[arg-type]
