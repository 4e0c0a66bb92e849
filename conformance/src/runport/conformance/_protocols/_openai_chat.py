"""``openai-chat``: a case as the bytes an OpenAI-compatible server sends — chat-completions
SSE for a streamed request (``stream: true``), one JSON body otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from runport.conformance._cases import Call, Case, Cite, Generated, Text, Thought, UsageStep
from runport.conformance._protocols._chat_request import chat_request_problems
from runport.conformance._wire_protocol import (
    Frame,
    Transcript,
    WireContext,
    WireProtocol,
    WireRequest,
    json_bytes,
)
from runport.contracts import ExecutionRequest

__all__ = ["OpenAIChat"]

CREATED: Final = 1_700_000_000
COMPLETION_ID: Final = "chatcmpl-runport-conformance"


def _sse(value: Any) -> bytes:
    return b"data: " + json_bytes(value) + b"\n\n"


def _chunk(model: str, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    return _sse(
        {
            "id": COMPLETION_ID,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
    )


def _usage(step: UsageStep) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": step.input_tokens,
        "completion_tokens": step.output_tokens,
        "total_tokens": step.input_tokens + step.output_tokens,
    }
    if step.cache_read:
        usage["prompt_tokens_details"] = {"cached_tokens": step.cache_read, "audio_tokens": 0}
    return usage


def _annotation(step: Cite) -> dict[str, Any]:
    """A citation as OpenAI's search models write it: character indexes into the content."""
    return {
        "type": "url_citation",
        "url_citation": {
            "url": step.url,
            "title": step.title,
            "start_index": step.start,
            "end_index": step.end,
        },
    }


def _image(step: Generated) -> dict[str, Any]:
    """A generated image as OpenRouter writes it: an ``image_url`` part with a ``data:`` URL."""
    url = f"data:{step.media_type};base64,{step.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _error_body(marker: str, kind: str, code: str) -> bytes:
    return json_bytes(
        {"error": {"message": f"{marker} scripted {kind}", "type": kind, "code": code}}
    )


def _transcript(case: Case, model: str) -> Transcript:
    opening = [b": runport-conformance keep-alive\n\n"]
    if case.role_frame:
        opening.append(_chunk(model, {"role": "assistant", "content": ""}))
    steps: list[Frame] = []
    usage: dict[str, int] | None = None
    announced: set[int] = set()
    for step in case.steps:
        if isinstance(step, Text):
            steps.append(Frame(_chunk(model, {"content": step.text}), 1))
        elif isinstance(step, Thought):
            if step.text:  # a signature has no place on this wire
                delta = {"content": None, "reasoning_content": step.text}
                steps.append(Frame(_chunk(model, delta), 1))
        elif isinstance(step, Call):
            entry: dict[str, Any] = {"index": step.index}
            function: dict[str, Any] = {"arguments": step.fragment}
            if step.index not in announced:
                announced.add(step.index)
                if step.call_id is not None:
                    entry["id"] = step.call_id
                entry["type"] = "function"
                assert step.name is not None
                function = {"name": step.name, **function}
            entry["function"] = function
            steps.append(Frame(_chunk(model, {"tool_calls": [entry]}), 1))
        elif isinstance(step, Cite):
            steps.append(Frame(_chunk(model, {"annotations": [_annotation(step)]}), 1))
        elif isinstance(step, Generated):
            steps.append(Frame(_chunk(model, {"images": [_image(step)]}), 1))
        elif isinstance(step, UsageStep):
            usage = _usage(step)
    closing = [] if case.ending == "marker_only" else [_chunk(model, {}, case.finish_reason)]
    if usage is not None:
        closing.append(
            _sse(
                {
                    "id": COMPLETION_ID,
                    "object": "chat.completion.chunk",
                    "created": CREATED,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    if case.ending != "finish_only":
        closing.append(b"data: [DONE]\n\n")
    return Transcript(steps, opening=opening, closing=closing)


def _message(case: Case) -> dict[str, Any]:
    text = "".join(step.text for step in case.steps if isinstance(step, Text))
    calls: dict[int, dict[str, Any]] = {}
    for step in case.steps:
        if isinstance(step, Call):
            call = calls.get(step.index)
            if call is None:
                call = {"type": "function", "function": {"name": step.name, "arguments": ""}}
                if step.call_id is not None:
                    call = {"id": step.call_id, **call}
                calls[step.index] = call
            call["function"]["arguments"] += step.fragment
    message: dict[str, Any] = {"role": "assistant", "content": text}
    reasoning = "".join(step.text for step in case.steps if isinstance(step, Thought))
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [call for _, call in sorted(calls.items())]
        if not text:
            message["content"] = None
    notes = [_annotation(step) for step in case.steps if isinstance(step, Cite)]
    if notes:
        message["annotations"] = notes
    images = [_image(step) for step in case.steps if isinstance(step, Generated)]
    if images:
        message["images"] = images
    return message


def _completion(case: Case, model: str) -> dict[str, Any]:
    usage = next((step for step in case.steps if isinstance(step, UsageStep)), None)
    completion: dict[str, Any] = {
        "id": COMPLETION_ID,
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": _message(case),
                "logprobs": None,
                "finish_reason": case.finish_reason,
            }
        ],
    }
    if usage is not None:
        completion["usage"] = _usage(usage)
    return completion


class OpenAIChat(WireProtocol):
    """Chat completions: ``POST {base_url}/chat/completions`` under ``/v1``; the completion
    marker ``data: [DONE]``, or a clean end of the body after a ``finish_reason`` (servers that
    send no ``[DONE]``); reasoning as ``reasoning_content``,
    kept as one part per turn; cache reads as ``prompt_tokens_details.cached_tokens`` (the
    API reports no cache writes); citations as ``annotations`` (``url_citation``) and
    generated images as ``images`` (``data:`` URLs), each in the delta that carries it; no
    server tools."""

    name: ClassVar[str] = "openai-chat"
    endpoint: ClassVar[str] = "POST {base_url}/chat/completions"
    root: ClassVar[str] = "/v1"
    features: ClassVar[frozenset[str]] = frozenset(
        {
            "cut_turns",
            "cut_calls",
            "refusals",
            "cache_usage",
            "separate_marker",
            "citations",
            "files",
        }
    )

    def recognise(self, request: WireRequest) -> bool | str:
        if not request.path.rstrip("/").endswith("/chat/completions"):
            return self.endpoint
        return isinstance(request.json, Mapping) and request.json.get("stream") is True

    def request_problems(self, request: WireRequest, sent: ExecutionRequest) -> list[str]:
        return chat_request_problems(request.json, sent)

    def reasoning(self, case: Case) -> list[dict[str, Any]]:
        text = "".join(step.text for step in case.steps if isinstance(step, Thought))
        if not text:
            return []
        return [{"text": text, "provider_metadata": {"openai": {"field": "reasoning_content"}}}]

    def stream(self, case: Case, context: WireContext) -> Transcript:
        return _transcript(case, context.model)

    def body(self, case: Case, context: WireContext) -> bytes:
        return json_bytes(_completion(case, context.model))

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        return self.frame(_error_body(context.marker, "server_error", "server_error"))

    def garbage_frame(self, context: WireContext) -> bytes:
        return b'data: {"choices": [{"delta": ' + context.marker.encode() + b"\n\n"

    def error_body(self, status: int, context: WireContext) -> bytes:
        if status == 429:
            return _error_body(context.marker, "rate_limit_error", "rate_limit_exceeded")
        return _error_body(context.marker, "server_error", "server_error")
