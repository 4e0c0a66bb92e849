"""The ``vertex-gemini`` and ``vertex-anthropic`` protocols: the paths they take are Vertex
AI's (a project's, or for Gemini express mode's), not the providers' own; they refuse what
Vertex AI refuses (no bearer or another one, express mode without its key, a Claude body with
``model`` or without Vertex's ``anthropic_version``) and an ``x-api-key``; their answers are
their base protocols', byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runport.conformance import CASES, PROTOCOLS, WireContext, WireRequest

GEMINI = PROTOCOLS["vertex-gemini"]
CLAUDE = PROTOCOLS["vertex-anthropic"]
PROJECT = "/v1/projects/my-project-1/locations/us-central1/publishers"
CLAUDE_BODY = {"anthropic_version": "vertex-2023-10-16", "messages": [], "stream": True}
BEARER = {"authorization": "Bearer ya29.token"}


def _request(
    path: str, body: dict[str, Any], headers: dict[str, str], query: str = ""
) -> WireRequest:
    queried = {"alt": [query]} if query else {}
    return WireRequest("POST", path, queried, headers, json.dumps(body).encode(), body)


def test_vertex_gemini_takes_a_projects_routes_and_express_modes_and_no_other() -> None:
    stream = f"{PROJECT}/google/models/gemini-2.5-flash:streamGenerateContent"
    assert GEMINI.recognise(_request(stream, {}, BEARER, "sse")) is True
    unstreamed = f"{PROJECT}/google/models/gemini-2.5-flash:generateContent"
    assert GEMINI.recognise(_request(unstreamed, {}, BEARER)) is False
    express = "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent"
    assert GEMINI.recognise(_request(express, {}, {}, "sse")) is True
    assert "alt=sse" in str(GEMINI.recognise(_request(stream, {}, BEARER)))
    for elsewhere in (
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        f"{PROJECT}/anthropic/models/claude:streamRawPredict",
        f"{PROJECT}/google/models/gemini-2.5-flash:streamRawPredict",
    ):
        assert GEMINI.recognise(_request(elsewhere, {}, BEARER, "sse")) == GEMINI.endpoint


def test_vertex_anthropic_takes_a_projects_raw_predict_routes_only() -> None:
    stream = f"{PROJECT}/anthropic/models/claude-sonnet-4@20250514:streamRawPredict"
    assert CLAUDE.recognise(_request(stream, CLAUDE_BODY, BEARER)) is True
    unstreamed = f"{PROJECT}/anthropic/models/claude-sonnet-4@20250514:rawPredict"
    assert CLAUDE.recognise(_request(unstreamed, CLAUDE_BODY, BEARER)) is False
    for elsewhere in (
        "/v1/messages",
        "/v1/publishers/anthropic/models/claude:streamRawPredict",
        f"{PROJECT}/google/models/claude:streamRawPredict",
        f"{PROJECT}/anthropic/models/claude:streamGenerateContent",
    ):
        assert CLAUDE.recognise(_request(elsewhere, CLAUDE_BODY, BEARER)) == CLAUDE.endpoint


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        (f"{PROJECT}/google/models/g:generateContent", BEARER, None),
        (f"{PROJECT}/google/models/g:generateContent", {}, 401),
        (f"{PROJECT}/google/models/g:generateContent", {"x-goog-api-key": "k"}, 401),
        (f"{PROJECT}/google/models/g:generateContent", {"authorization": "Basic eA=="}, 401),
        ("/v1/publishers/google/models/g:generateContent", {"x-goog-api-key": "k"}, None),
        ("/v1/publishers/google/models/g:generateContent", BEARER, 401),
    ],
)
def test_vertex_gemini_refuses_a_request_not_signed_as_its_route_wants(
    path: str, headers: dict[str, str], status: int | None
) -> None:
    refusal = GEMINI.check(_request(path, {}, headers), CASES[0])
    assert (refusal and refusal.status) == status
    if refusal is not None:
        assert json.loads(refusal.body)["error"]["status"] == "UNAUTHENTICATED"


def test_the_tokens_and_keys_a_protocol_is_told_are_the_only_ones_it_takes() -> None:
    told = type(GEMINI)(tokens=("ya29.right",), api_keys=())
    path = f"{PROJECT}/google/models/g:generateContent"
    assert told.check(_request(path, {}, {"authorization": "Bearer ya29.right"}), CASES[0]) is None
    assert told.check(_request(path, {}, BEARER), CASES[0]) is not None
    express = "/v1/publishers/google/models/g:generateContent"
    assert told.check(_request(express, {}, {"x-goog-api-key": "k"}), CASES[0]) is not None
    claude = type(CLAUDE)(tokens=("ya29.right",))
    path = f"{PROJECT}/anthropic/models/c:rawPredict"
    assert claude.check(_request(path, CLAUDE_BODY, BEARER), CASES[0]) is not None


@pytest.mark.parametrize(
    ("body", "headers", "status", "reason"),
    [
        (CLAUDE_BODY, BEARER, None, ""),
        (CLAUDE_BODY, {}, 401, "no OAuth bearer"),
        ({**CLAUDE_BODY, "model": "claude"}, BEARER, 400, "model"),
        ({"messages": []}, BEARER, 400, "anthropic_version"),
        ({**CLAUDE_BODY, "anthropic_version": "2023-06-01"}, BEARER, 400, "anthropic_version"),
        (CLAUDE_BODY, {**BEARER, "x-api-key": "sk-ant"}, 400, "x-api-key"),
    ],
)
def test_vertex_anthropic_refuses_what_vertex_refuses(
    body: dict[str, Any], headers: dict[str, str], status: int | None, reason: str
) -> None:
    path = f"{PROJECT}/anthropic/models/claude-sonnet-4@20250514:streamRawPredict"
    refusal = CLAUDE.check(_request(path, body, headers), CASES[0])
    assert (refusal and refusal.status) == status
    if refusal is not None:
        assert reason in refusal.reason


@pytest.mark.parametrize("case", CASES[:6], ids=lambda case: case.name)
def test_the_answers_are_the_base_protocols(case: Any) -> None:
    context = WireContext("m", "RUNPORT-BODY-0123456789abcdef")
    for vertex, base in ((GEMINI, PROTOCOLS["gemini"]), (CLAUDE, PROTOCOLS["anthropic-messages"])):
        played = vertex.play(case)
        assert played == base.play(case)
        assert vertex.stream(played, context) == base.stream(played, context)
        assert vertex.body(played, context) == base.body(played, context)
