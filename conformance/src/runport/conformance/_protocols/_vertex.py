"""``vertex-gemini`` and ``vertex-anthropic``: Gemini's and Claude's answers as Vertex AI serves
them — the same cases and frames as ``gemini`` and ``anthropic-messages``, under a project's
model path (``/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/
{model}:{verb}``), signed by an OAuth bearer token; Gemini also in express mode
(``/v1/publishers/google/models/{model}:{verb}`` with an ``x-goog-api-key``)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import ClassVar, Final

from runport.conformance._cases import Case
from runport.conformance._protocols._anthropic_messages import AnthropicMessages
from runport.conformance._protocols._gemini import Gemini
from runport.conformance._wire_protocol import Refusal, WireRequest, json_bytes

__all__ = ["VertexAnthropic", "VertexGemini"]

ROUTE: Final = re.compile(
    r"/v1(?:/projects/(?P<project>[a-z][a-z0-9-]{4,28}[a-z0-9])"
    r"/locations/(?P<location>[a-z]+(?:-[a-z0-9]+)*))?"
    r"/publishers/(?P<publisher>google|anthropic)/models/(?P<model>[A-Za-z0-9._@-]+)"
    r":(?P<verb>generateContent|streamGenerateContent|rawPredict|streamRawPredict)"
)
"""A Vertex AI model route, the one ``runport.conformance.vertex`` takes: a project's
(``project`` and ``location``), or express mode's (neither)."""
VERTEX_ANTHROPIC_VERSION: Final = "vertex-2023-10-16"
"""What Vertex AI wants in a Claude body's ``anthropic_version``."""

_UNAUTHENTICATED: Final = (
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
    "cookie or other valid authentication credential. See "
    "https://developers.google.com/identity/sign-in/web/devconsole-project."
)


def _google_error(status: int, state: str, message: str, reason: str) -> Refusal:
    error = {"code": status, "message": message, "status": state}
    return Refusal(status, json_bytes({"error": error}), reason)


def _bearer(request: WireRequest) -> str:
    header = request.headers.get("authorization", "")
    return header[len("Bearer ") :] if header.startswith("Bearer ") else ""


def _token_refusal(request: WireRequest, tokens: frozenset[str] | None) -> Refusal | None:
    token = _bearer(request)
    if token and (tokens is None or token in tokens):
        return None
    return _google_error(401, "UNAUTHENTICATED", _UNAUTHENTICATED, "no OAuth bearer it takes")


class VertexGemini(Gemini):
    """Gemini on Vertex AI: ``POST {base_url}/v1/projects/{project}/locations/{location}/
    publishers/google/models/{model}:streamGenerateContent?alt=sse`` (``:generateContent``
    unstreamed), signed by ``Authorization: Bearer``; or express mode's ``/v1/publishers/
    google/models/{model}:…`` with an ``x-goog-api-key``. What it refuses, as Vertex AI does:
    another path (404), a project's route without a bearer token (401, or one not among
    ``tokens`` when those are given), an express route without a key (401, or one not among
    ``api_keys``). Its answers are ``gemini``'s."""

    name: ClassVar[str] = "vertex-gemini"
    endpoint: ClassVar[str] = (
        "POST {base_url}/v1/projects/{project}/locations/{location}/publishers/google/models/"
        "{model}:streamGenerateContent?alt=sse"
    )

    def __init__(
        self, *, tokens: Collection[str] | None = None, api_keys: Collection[str] | None = None
    ) -> None:
        self.tokens = None if tokens is None else frozenset(tokens)
        """The OAuth tokens a bearer may hold; ``None``: any non-empty one."""
        self.api_keys = None if api_keys is None else frozenset(api_keys)
        """The express mode keys ``x-goog-api-key`` may hold; ``None``: any non-empty one."""

    def recognise(self, request: WireRequest) -> bool | str:
        found = ROUTE.fullmatch(request.path)
        if found is None or found["publisher"] != "google":
            return self.endpoint
        if found["verb"] == "generateContent":
            return False
        if found["verb"] != "streamGenerateContent":
            return self.endpoint
        if list(request.query.get("alt", ())) != ["sse"]:
            return "a streamed request needs ?alt=sse (without it the API sends a JSON array)"
        return True

    def check(self, request: WireRequest, case: Case) -> Refusal | None:
        found = ROUTE.fullmatch(request.path)
        if found is not None and found["project"] is None:
            key = request.headers.get("x-goog-api-key", "")
            if not key or (self.api_keys is not None and key not in self.api_keys):
                message = "API keys are not supported by this API. " + _UNAUTHENTICATED
                return _google_error(401, "UNAUTHENTICATED", message, "no express key it takes")
        else:
            refused = _token_refusal(request, self.tokens)
            if refused is not None:
                return refused
        return super().check(request, case)


class VertexAnthropic(AnthropicMessages):
    """Claude on Vertex AI: ``POST {base_url}/v1/projects/{project}/locations/{location}/
    publishers/anthropic/models/{model}:streamRawPredict`` (``:rawPredict`` unstreamed),
    signed by ``Authorization: Bearer``, the body the Messages API's with
    ``anthropic_version: "vertex-2023-10-16"`` and no ``model`` (the path names it). What it
    refuses: another path (404), a request without a bearer token (401, or one not among
    ``tokens`` when those are given), a body with ``model`` or without that version (400, as
    Vertex AI does), and an ``x-api-key`` (400: a key for Anthropic's own API has no business
    going to Google). Its answers are ``anthropic-messages``'."""

    name: ClassVar[str] = "vertex-anthropic"
    endpoint: ClassVar[str] = (
        "POST {base_url}/v1/projects/{project}/locations/{location}/publishers/anthropic/models/"
        "{model}:streamRawPredict"
    )

    def __init__(self, *, tokens: Collection[str] | None = None) -> None:
        self.tokens = None if tokens is None else frozenset(tokens)
        """The OAuth tokens a bearer may hold; ``None``: any non-empty one."""

    def recognise(self, request: WireRequest) -> bool | str:
        found = ROUTE.fullmatch(request.path)
        if found is None or found["publisher"] != "anthropic" or found["project"] is None:
            return self.endpoint
        if found["verb"] not in ("rawPredict", "streamRawPredict"):
            return self.endpoint
        return found["verb"] == "streamRawPredict"

    def check(self, request: WireRequest, case: Case) -> Refusal | None:
        refused = _token_refusal(request, self.tokens)
        if refused is not None:
            return refused
        body = request.json if isinstance(request.json, Mapping) else {}
        problem = None
        if body.get("anthropic_version") != VERTEX_ANTHROPIC_VERSION:
            problem = f"anthropic_version: must be {VERTEX_ANTHROPIC_VERSION!r}"
        elif "model" in body:
            problem = "model: Extra inputs are not permitted (the path names the model)"
        elif "x-api-key" in request.headers:
            problem = "x-api-key sent to Vertex AI (it takes an OAuth bearer token)"
        if problem is not None:
            error = {"type": "invalid_request_error", "message": problem}
            return Refusal(400, json_bytes({"type": "error", "error": error}), problem)
        return super().check(request, case)
