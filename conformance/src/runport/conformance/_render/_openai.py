"""``openai-chat``: a case as the bytes an OpenAI-compatible server sends — chat-completions
SSE for a streamed request, one JSON body otherwise."""

from __future__ import annotations

from typing import Any, Final

from runport.conformance._cases import Call, Case, Text, Thought, UsageStep
from runport.conformance._render._wire import (
    Piece,
    Response,
    body_response,
    dumps,
    stream_response,
)

__all__ = ["json_response", "sse_response"]

CREATED: Final = 1_700_000_000
COMPLETION_ID: Final = "chatcmpl-runport-conformance"


def _sse(value: Any) -> bytes:
    return b"data: " + dumps(value) + b"\n\n"


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


def _usage(step: UsageStep) -> dict[str, int]:
    return {
        "prompt_tokens": step.input_tokens,
        "completion_tokens": step.output_tokens,
        "total_tokens": step.input_tokens + step.output_tokens,
    }


def _error_body(marker: str, kind: str, code: str) -> bytes:
    return dumps({"error": {"message": f"{marker} scripted {kind}", "type": kind, "code": code}})


def _status_body(case: Case, marker: str) -> bytes:
    if case.fault is not None and case.fault.status == 429:
        return _error_body(marker, "rate_limit_error", "rate_limit_exceeded")
    return _error_body(marker, "server_error", "server_error")


def sse_response(case: Case, *, model: str, marker: str, request: Any = None) -> Response:
    """The case as a streamed chat-completions response."""
    opening = [b": runport-conformance keep-alive\n\n"]
    if case.role_frame:
        opening.append(_chunk(model, {"role": "assistant", "content": ""}))
    steps: list[Piece] = []
    usage: dict[str, int] | None = None
    announced: set[int] = set()
    for step in case.steps:
        if isinstance(step, Text):
            steps.append((_chunk(model, {"content": step.text}), 1))
        elif isinstance(step, Thought):
            if step.text:  # a signature has no place on this wire
                steps.append((_chunk(model, {"content": None, "reasoning_content": step.text}), 1))
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
            steps.append((_chunk(model, {"tool_calls": [entry]}), 1))
        else:
            usage = _usage(step)
    closing = [_chunk(model, {}, case.finish_reason)]
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
    closing.append(b"data: [DONE]\n\n")
    return stream_response(
        case,
        opening=opening,
        steps=steps,
        closing=closing,
        error_frame=b"data: " + _error_body(marker, "server_error", "server_error") + b"\n\n",
        garbage=b'data: {"choices": [{"delta": ' + marker.encode() + b"\n\n",
        status_body=_status_body(case, marker),
    )


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
    return message


def json_response(case: Case, *, model: str, marker: str, request: Any = None) -> Response:
    """The case as a non-streamed chat-completions response (``stream`` not true)."""
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
    return body_response(
        case,
        completion,
        error_status=500,
        error_body=_error_body(marker, "server_error", "server_error"),
        status_body=_status_body(case, marker),
        marker=marker,
    )
