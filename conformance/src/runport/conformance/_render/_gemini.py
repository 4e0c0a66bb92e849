"""``gemini``: a played case (``_played``) as the Gemini API sends it — one
``GenerateContentResponse`` chunk per part in an SSE stream (``alt=sse``, CRLF-delimited as
Google's servers send it), the completion marker a candidate's ``finishReason``; or one
response object."""

from __future__ import annotations

import json
from typing import Any, Final

from runport.conformance._cases import Call, Case, Text, Thought, UsageStep, block_numbers
from runport.conformance._played import played_as
from runport.conformance._render._wire import (
    Piece,
    Response,
    body_response,
    dumps,
    stream_response,
)

__all__ = ["generate_response", "stream_generate_response"]

RESPONSE_ID: Final = "runport-conformance-response"
_STATUS: Final = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def _sse(value: Any) -> bytes:
    return b"data: " + dumps(value) + b"\r\n\r\n"


def _error(marker: str, code: int) -> bytes:
    status = _STATUS.get(code, "UNKNOWN")
    return dumps(
        {"error": {"code": code, "message": f"{marker} scripted {status}", "status": status}}
    )


def _response(model: str, parts: list[dict[str, Any]], **candidate: Any) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"parts": parts, "role": "model"}, **candidate, "index": 0}],
        "modelVersion": model,
        "responseId": RESPONSE_ID,
    }


def _call(step: Call, arguments: str) -> dict[str, Any]:
    call: dict[str, Any] = {"name": step.name, "args": json.loads(arguments)}
    if step.call_id is not None:
        call["id"] = step.call_id
    return {"functionCall": call}


def _parts(case: Case) -> list[tuple[dict[str, Any], int]]:
    """Each part and the progress events it carries (a call: its announcement and its one
    fragment, which in a played case follows the announcement; a thought: its text, the
    part marked ``thought``, its signature as ``thoughtSignature``)."""
    parts: list[tuple[dict[str, Any], int]] = []
    steps = case.steps
    for position, step in enumerate(steps):
        if isinstance(step, Text):
            parts.append(({"text": step.text}, 1))
        elif isinstance(step, Thought):
            thought: dict[str, Any] = {"text": step.text, "thought": True}
            if step.signature is not None:
                thought["thoughtSignature"] = step.signature
            parts.append((thought, int(bool(step.text))))
        elif isinstance(step, Call) and step.name is not None:
            whole = steps[position + 1]
            assert isinstance(whole, Call)
            parts.append((_call(step, whole.fragment), 2))
    return parts


def _usage(case: Case) -> dict[str, Any]:
    usage = next((step for step in case.steps if isinstance(step, UsageStep)), None)
    if usage is None:
        return {}
    return {
        "usageMetadata": {
            "promptTokenCount": usage.input_tokens,
            "candidatesTokenCount": usage.output_tokens,
            "totalTokenCount": usage.input_tokens + usage.output_tokens,
        }
    }


def _status_body(case: Case, marker: str) -> bytes:
    status = case.fault.status if case.fault is not None else None
    return _error(marker, status or 500)


def stream_generate_response(
    case: Case, *, model: str, marker: str, request: Any = None
) -> Response:
    """The case as ``:streamGenerateContent?alt=sse`` answers it."""
    case = played_as(case, "gemini")
    steps: list[Piece] = [
        (_sse(_response(model, [part])), carried) for part, carried in _parts(case)
    ]
    last = {**_response(model, [{"text": ""}], finishReason=case.finish_reason), **_usage(case)}
    return stream_response(
        case,
        opening=(),
        steps=steps,
        closing=[_sse(last)],
        error_frame=_sse(json.loads(_error(marker, 500))),
        garbage=b'data: {"candidates": [{"content": ' + marker.encode() + b"\r\n\r\n",
        status_body=_status_body(case, marker),
    )


def generate_response(case: Case, *, model: str, marker: str, request: Any = None) -> Response:
    """The case as ``:generateContent`` answers it: one response, texts joined per run."""
    case = played_as(case, "gemini")
    parts: list[dict[str, Any]] = []
    runs: list[object] = []
    numbers = iter(
        n
        for n, s in zip(block_numbers(case.steps), case.steps, strict=True)
        if not isinstance(s, UsageStep) and not (isinstance(s, Call) and s.name is None)
    )
    for part, _ in _parts(case):
        block = next(numbers, None)
        run: object = "text" if "text" in part and not part.get("thought") else block
        if "text" in part and parts and runs[-1] == run and run is not None:
            parts[-1] = {**parts[-1], **part, "text": parts[-1]["text"] + part["text"]}
        else:
            parts.append(part)
            runs.append(run)
    body = {**_response(model, parts, finishReason=case.finish_reason), **_usage(case)}
    return body_response(
        case,
        body,
        error_status=500,
        error_body=_error(marker, 500),
        status_body=_status_body(case, marker),
        marker=marker,
    )
