"""Renders the protocol-neutral cases per protocol.

``scenario``: a ``runport.mock/v1`` mapping. ``openai-chat``, ``openai-responses``,
``anthropic-messages``, ``gemini``: the bytes such a server sends — an event stream for a
streamed request, one JSON body otherwise — each frame tagged with how many progress events the
client owes once it has the frame (the promptness bookkeeping of law 4). Faults that an event
stream cannot express as data (reset, stall) are an ``ending``; faults the upstream commits
before any frame are an HTTP status. Anthropic, Responses and Gemini render a case as that
protocol plays it (``_played``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from runport.conformance._cases import Case
from runport.conformance._render import _openai_responses as responses
from runport.conformance._render._anthropic import (
    event_stream_response,
    message_response,
    sent_back_problem,
    thinking_blocks,
)
from runport.conformance._render._gemini import generate_response, stream_generate_response
from runport.conformance._render._openai import json_response, sse_response
from runport.conformance._render._scenario import render_scenario
from runport.conformance._render._wire import Frame, Response

__all__ = [
    "WIRES",
    "Frame",
    "Response",
    "Wire",
    "json_response",
    "render",
    "render_scenario",
    "sse_response",
]

Render = Callable[..., Response]


@dataclass(frozen=True)
class Wire:
    """One HTTP protocol: where its server lives under the upstream's address (``root``),
    which requests it answers, and its two renderings."""

    root: str
    streamed: Render
    unstreamed: Render
    route: Callable[[str, Any], bool | str]
    """``(path, JSON body)`` → whether the request asks for a stream, or why it is refused."""
    refusal: Callable[[Any, Case], bytes | None] = lambda request, case: None
    """``(JSON body, case)`` → the API's own HTTP 400 body when the request breaks a rule
    the API enforces (Anthropic: thinking blocks sent back intact), else ``None``."""
    sent_back: Callable[[Case], tuple[dict[str, Any], ...]] | None = None
    """``case`` → what the next turn's request must carry back of its reasoning (the
    ``sends_back`` of ``follow_up_case``), for a protocol whose ``refusal`` enforces it."""

    def respond(
        self, case: Case, *, stream: bool, model: str, marker: str, request: Any = None
    ) -> Response:
        """``request`` is the JSON body the client sent (Anthropic reads its ``tool_choice``)."""
        render = self.streamed if stream else self.unstreamed
        return render(case, model=model, marker=marker, request=request)


def _chat_route(path: str, body: Any) -> bool | str:
    if not urlsplit(path).path.rstrip("/").endswith("/chat/completions"):
        return "POST {base_url}/chat/completions"
    return isinstance(body, Mapping) and body.get("stream") is True


def _messages_route(path: str, body: Any) -> bool | str:
    if urlsplit(path).path.rstrip("/") != "/v1/messages":
        return "POST {base_url}/v1/messages"
    return isinstance(body, Mapping) and body.get("stream") is True


_GEMINI_PATH: Final = re.compile(r"/v1beta/models/([^/:]+):(streamGenerateContent|generateContent)")


def _gemini_route(path: str, body: Any) -> bool | str:
    parts = urlsplit(path)
    found = _GEMINI_PATH.fullmatch(parts.path)
    if found is None:
        return "POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse"
    if found[2] == "generateContent":
        return False
    if parse_qs(parts.query).get("alt") != ["sse"]:
        return "a streamed request needs ?alt=sse (without it the API sends a JSON array)"
    return True


def _messages_refusal(request: Any, case: Case) -> bytes | None:
    problem = sent_back_problem(request, case)
    if problem is None:
        return None
    error = {"type": "invalid_request_error", "message": problem}
    return json.dumps({"type": "error", "error": error}).encode()


def _responses_refusal(request: Any, case: Case) -> bytes | None:
    problem = responses.sent_back_problem(request, case)
    if problem is None:
        return None
    error = {"message": problem, "type": "invalid_request_error", "param": "input", "code": None}
    return json.dumps({"error": error}).encode()


WIRES: Final[Mapping[str, Wire]] = {
    "openai-chat": Wire("/v1", sse_response, json_response, _chat_route),
    responses.PROTOCOL: Wire(
        "/v1",
        responses.response_stream,
        responses.response_body,
        responses.route,
        _responses_refusal,
        responses.reasoning_items,
    ),
    "anthropic-messages": Wire(
        "",
        event_stream_response,
        message_response,
        _messages_route,
        _messages_refusal,
        thinking_blocks,
    ),
    "gemini": Wire("", stream_generate_response, generate_response, _gemini_route),
}


def render(
    protocol: str, case: Case, *, stream: bool, model: str, marker: str, request: Any = None
) -> Response:
    """``case`` as a ``protocol`` server answers a streamed or unstreamed request."""
    return WIRES[protocol].respond(case, stream=stream, model=model, marker=marker, request=request)
