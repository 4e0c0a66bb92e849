"""``azure-openai-chat``: chat completions as an Azure OpenAI resource serves them — under a
deployment's path with an ``api-version`` query, behind an ``api-key`` (or an Entra ID bearer
token), with the content-filter results Azure adds to every chunk and answer."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any, ClassVar, Final

from runport.conformance._cases import Case
from runport.conformance._protocols._openai_chat import OpenAIChat
from runport.conformance._wire_protocol import (
    Frame,
    Refusal,
    Transcript,
    WireContext,
    WireRequest,
    json_bytes,
)

__all__ = ["AzureOpenAIChat"]

_DEPLOYMENT_PATH = re.compile(r"/openai/deployments/([A-Za-z0-9._%-]{1,192})/chat/completions")
_V1_PATH: Final = "/openai/v1/chat/completions"
_API_VERSION = re.compile(r"(\d{4}-\d{2}-\d{2})(-preview)?")
_FIRST_WITH_STREAM_OPTIONS: Final = "2024-09-01"
_FINGERPRINT: Final = "fp_b705f0c291"

_SAFE: Final = {"filtered": False, "severity": "safe"}
_FILTERS: Final[dict[str, Any]] = {
    "hate": _SAFE,
    "self_harm": _SAFE,
    "sexual": _SAFE,
    "violence": _SAFE,
}
_PROMPT_FILTERS: Final[list[dict[str, Any]]] = [
    {
        "prompt_index": 0,
        "content_filter_results": {**_FILTERS, "jailbreak": {"filtered": False, "detected": False}},
    }
]
_ACCESS_DENIED: Final = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide "
    "a valid key for an active subscription and use a correct regional API endpoint for your "
    "resource."
)


def _data(frame: bytes) -> Any:
    if not frame.startswith(b"data: {"):
        return None
    return json.loads(frame[len(b"data: ") :])


def _sse(value: Any) -> bytes:
    return b"data: " + json_bytes(value) + b"\n\n"


def _filtered(chunk: dict[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
    """``chunk`` with Azure's ``content_filter_results`` on each choice and its
    ``system_fingerprint``."""
    choices = [{"content_filter_results": dict(results), **c} for c in chunk.get("choices", [])]
    return {**chunk, "choices": choices, "system_fingerprint": _FINGERPRINT}


def _azure_frame(frame: bytes, results: Mapping[str, Any]) -> bytes:
    chunk = _data(frame)
    if type(chunk) is not dict or not chunk.get("choices"):
        return frame  # a keep-alive, [DONE], the usage chunk: as OpenAI writes them
    return _sse(_filtered(chunk, results))


def _refusal(status: int, code: str | None, message: str, reason: str) -> Refusal:
    error: dict[str, Any] = {"code": code, "message": message}
    return Refusal(status, json_bytes({"error": error}), reason)


class AzureOpenAIChat(OpenAIChat):
    """Azure OpenAI's chat completions: ``POST {base_url}/openai/deployments/{deployment}/
    chat/completions?api-version=…`` (or the v1 endpoint, ``/openai/v1/chat/completions``),
    the resource's endpoint as ``base_url``. What it refuses, as Azure does: another path or
    no ``api-version`` (404), a request with neither ``api-key`` nor ``Authorization: Bearer``
    (401, or one not among ``api_keys`` / ``tokens`` when those are given), an
    ``api-version`` it does not know (400), and ``stream_options`` on a version older than
    2024-09-01 (400). Its answers carry ``prompt_filter_results`` in a first chunk with no
    choices, ``content_filter_results`` on every choice, and a chunk of filter offsets after
    the finish reason."""

    name: ClassVar[str] = "azure-openai-chat"
    endpoint: ClassVar[str] = (
        "POST {base_url}/openai/deployments/{deployment}/chat/completions?api-version=…"
    )
    root: ClassVar[str] = ""
    features: ClassVar[frozenset[str]] = OpenAIChat.features - {"separate_marker"}
    """Azure always sends both the finish reason and ``[DONE]``."""

    def __init__(
        self, *, api_keys: Collection[str] | None = None, tokens: Collection[str] | None = None
    ) -> None:
        self.api_keys = None if api_keys is None else frozenset(api_keys)
        """The keys ``api-key`` may hold; ``None``: any non-empty one."""
        self.tokens = None if tokens is None else frozenset(tokens)
        """The Entra ID tokens a bearer may hold; ``None``: any non-empty one."""

    def recognise(self, request: WireRequest) -> bool | str:
        path = request.path.rstrip("/")
        versioned = request.query.get("api-version")
        if path != _V1_PATH and (not _DEPLOYMENT_PATH.fullmatch(path) or not versioned):
            return f"Resource not found: {self.endpoint}"
        return isinstance(request.json, Mapping) and request.json.get("stream") is True

    def check(self, request: WireRequest, case: Case) -> Refusal | None:
        key = request.headers.get("api-key", "")
        bearer = request.headers.get("authorization", "")
        token = bearer[len("Bearer ") :] if bearer.startswith("Bearer ") else ""
        key_ok = bool(key) and (self.api_keys is None or key in self.api_keys)
        token_ok = bool(token) and (self.tokens is None or token in self.tokens)
        if not (key_ok or token_ok):
            return _refusal(401, "401", _ACCESS_DENIED, "no api-key (nor a bearer token) it takes")
        version = request.query.get("api-version", [""])[-1]
        if request.path.rstrip("/") != _V1_PATH or version:
            dated = _API_VERSION.fullmatch(version)
            if dated is None and version not in ("preview", "latest"):
                return _refusal(400, "BadRequest", "API version not supported", "api-version")
            sent = request.json if isinstance(request.json, Mapping) else {}
            if "stream_options" in sent and dated and dated[1] < _FIRST_WITH_STREAM_OPTIONS:
                error = {
                    "message": "Unrecognized request argument supplied: stream_options",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
                reason = f"stream_options sent to api-version {version}"
                return Refusal(400, json_bytes({"error": error}), reason)
        return None

    def stream(self, case: Case, context: WireContext) -> Transcript:
        plain = super().stream(case, context)
        prompt = {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": _PROMPT_FILTERS,
        }
        opening = [
            plain.opening[0],
            _sse(prompt),
            *(_azure_frame(f, {}) for f in plain.opening[1:]),
        ]
        steps = [Frame(_azure_frame(frame.data, _FILTERS), frame.carries) for frame in plain.steps]
        closing = [_azure_frame(frame, {}) for frame in plain.closing]
        finish = _data(plain.closing[0])
        offsets = {
            **finish,
            "choices": [
                {
                    "content_filter_offsets": {
                        "check_offset": 0,
                        "start_offset": 0,
                        "end_offset": 64,
                    },
                    "content_filter_results": _FILTERS,
                    "finish_reason": None,
                    "index": 0,
                }
            ],
        }
        closing.insert(1, _sse(offsets))
        return Transcript(steps, opening=opening, closing=closing)

    def body(self, case: Case, context: WireContext) -> bytes:
        completion = json.loads(super().body(case, context))
        completion = _filtered(completion, _FILTERS)
        completion["prompt_filter_results"] = _PROMPT_FILTERS
        return json_bytes(completion)

    def error_body(self, status: int, context: WireContext) -> bytes:
        if status == 429:
            message = (
                f"{context.marker} Requests to the ChatCompletions_Create Operation under Azure "
                "OpenAI API version 2024-10-21 have exceeded token rate limit of your current "
                "OpenAI S0 pricing tier. Please retry after 6 seconds."
            )
            return json_bytes({"error": {"code": "429", "message": message}})
        message = f"{context.marker} The server had an error while processing your request."
        return json_bytes({"error": {"code": "InternalServerError", "message": message}})
