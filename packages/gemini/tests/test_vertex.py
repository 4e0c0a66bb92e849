"""Gemini on Vertex AI: the project/location URL, OAuth tokens from google-auth refreshed when
they expire (once per 401, then the caller's), express mode with an API key, and the
``vertex-gemini`` entry point — against runport.conformance's loopback Vertex AI, which checks
what Vertex AI checks."""

from __future__ import annotations

import json

import pytest

from runport.conformance.providers import make_request, run_streamed, run_streamed_async
from runport.conformance.vertex import EXPRESS_KEY, VertexEmulation
from runport.contracts import ErrorCode
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter, create_vertex_adapter
from runport.http import GoogleAuth, Vertex
from runport.ports import PortError

from .gemini_wire import Turn, response_body, stream_chunks, text

TURN = Turn([[text("Hello from ")], [text("Vertex")]])
STREAM = ("text/event-stream", b"".join(stream_chunks(TURN)))
PLAIN = ("application/json", json.dumps(response_body(TURN)).encode())
PROJECT = "my-project-1"


def on(emulation: VertexEmulation, **keywords: object) -> GeminiAdapter:
    return GeminiAdapter(
        model="gemini-2.5-flash",
        base_url=emulation.base_url,
        **keywords,  # type: ignore[arg-type]
    )


def test_a_project_s_model_is_posted_to_its_location_with_a_refreshed_token() -> None:
    with VertexEmulation([STREAM, PLAIN]) as vertex:
        auth = GoogleAuth(vertex.credentials())
        with on(vertex, project=PROJECT, location="europe-west4", auth=auth) as adapter:
            streamed = run_streamed(adapter, make_request())
            plain = adapter.execute(make_request())
    assert streamed.receipt is not None
    assert streamed.receipt.text == "Hello from Vertex" == plain.text
    first, second = vertex.requests
    assert first.path == (
        "/v1/projects/my-project-1/locations/europe-west4/publishers/google/models/"
        "gemini-2.5-flash:streamGenerateContent"
    )
    assert first.query == {"alt": ["sse"]}
    assert second.verb == "generateContent"
    assert first.headers["authorization"].startswith("Bearer ya29.loopback-")
    assert "x-goog-api-key" not in first.headers
    assert vertex.tokens_issued == 1  # refreshed once, then reused while valid
    assert vertex.refused == []


def test_an_expired_token_is_refreshed_once_and_the_call_goes_on() -> None:
    with VertexEmulation([STREAM]) as vertex:
        auth = GoogleAuth(vertex.credentials())
        with on(vertex, project=PROJECT, auth=auth) as adapter:
            assert run_streamed(adapter, make_request()).receipt is not None
            vertex.expire()  # mid-batch: the token handed out is revoked
            again = run_streamed(adapter, make_request())
    assert again.receipt is not None
    assert again.receipt.text == "Hello from Vertex"
    assert vertex.tokens_issued == 2
    assert [status for status, _ in vertex.refused] == [401]
    assert len(vertex.requests) == 2  # the refused request generated nothing


def test_credentials_the_token_endpoint_refuses_fail_coded_before_any_model_request() -> None:
    with VertexEmulation([STREAM]) as vertex:
        credentials = vertex.credentials()
        credentials._refresh_token = "revoked"  # google-auth keeps it there
        with on(vertex, project=PROJECT, auth=GoogleAuth(credentials)) as adapter:
            outcome = run_streamed(adapter, make_request())
    assert isinstance(outcome.error, PortError)
    assert outcome.error.code == ErrorCode.RUNTIME_PERMANENT
    assert "no access token" in outcome.error.message
    assert "loopback-secret" not in outcome.error.message
    assert vertex.requests == []


def test_express_mode_sends_the_api_key_to_the_publisher_path() -> None:
    with (
        VertexEmulation([STREAM]) as vertex,
        on(vertex, vertex=True, api_key=EXPRESS_KEY) as adapter,
    ):
        outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    [request] = vertex.requests
    assert request.path == "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent"
    assert request.project is None


def test_the_async_twin_signs_on_the_event_loop() -> None:
    with VertexEmulation([STREAM]) as vertex:
        adapter = AsyncGeminiAdapter(
            model="gemini-2.5-flash",
            base_url=vertex.base_url,
            project=PROJECT,
            auth=GoogleAuth(vertex.credentials()),
        )
        outcome = run_streamed_async(adapter, make_request())
    assert outcome.receipt is not None
    assert outcome.receipt.text == "Hello from Vertex"
    assert vertex.tokens_issued == 1


def test_the_entry_point_reads_vertex_s_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    with VertexEmulation([STREAM]) as vertex:
        monkeypatch.setenv("RUNPORT_VERTEX_GEMINI_MODEL", "gemini-2.5-flash")
        monkeypatch.setenv("RUNPORT_VERTEX_GEMINI_BASE_URL", vertex.base_url)
        monkeypatch.setenv("RUNPORT_VERTEX_API_KEY", EXPRESS_KEY)
        with create_vertex_adapter() as adapter:
            outcome = run_streamed(adapter, make_request())
    assert outcome.receipt is not None
    assert vertex.requests[0].path.startswith("/v1/publishers/google/models/")


def test_the_default_host_is_the_location_s() -> None:
    auth = GoogleAuth(object())  # never asked: nothing is sent
    regional = GeminiAdapter(
        model="gemini-2.5-flash", project=PROJECT, location="us-east5", auth=auth
    )
    worldwide = GeminiAdapter(model="gemini-2.5-flash", project=PROJECT, auth=auth)
    assert "https://us-east5-aiplatform.googleapis.com" in repr(regional)
    assert "https://aiplatform.googleapis.com" in repr(worldwide)
    assert Vertex().models("google") == "v1/publishers/google/models"


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"project": PROJECT, "api_key": "k"}, "not an api_key"),
        ({"location": "us-central1"}, "location needs a project"),
        ({"project": "Not A Project"}, "Google Cloud project id"),
        ({"project": PROJECT, "location": "us central"}, "Vertex AI region"),
        ({"vertex": True}, "express mode"),
    ],
)
def test_vertex_keywords_that_cannot_work_are_refused_at_construction(
    keywords: dict[str, object], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        GeminiAdapter(model="gemini-2.5-flash", auth=GoogleAuth(object()), **keywords)  # type: ignore[arg-type]
