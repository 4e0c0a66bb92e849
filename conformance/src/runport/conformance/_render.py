"""Renders the protocol-neutral cases per protocol.

``scenario``: a ``runport.mock/v1`` mapping, validated by ``runport.core.parse_scenario`` — the
same loader every scripted runtime uses, so the suite never depends on ``runport.mock``.

``openai-chat``: the bytes an OpenAI-compatible server sends, as chat-completions SSE for a
streamed request and as one JSON body otherwise, each frame tagged with how many progress
events the client owes once it has the frame (the promptness bookkeeping of law 4). Faults
that SSE cannot express as data (reset, stall) are an ``ending``; faults the upstream commits
before any frame are an HTTP status.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from runport.conformance._cases import Call, Case, Text, UsageStep
from runport.core import Scenario, parse_scenario

__all__ = ["Frame", "Response", "json_response", "render_scenario", "sse_response"]

CREATED: Final = 1_700_000_000
COMPLETION_ID: Final = "chatcmpl-runport-conformance"


# --------------------------------------------------------------------------------------------
# scenario
# --------------------------------------------------------------------------------------------


def _scenario_events(case: Case) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    usage: list[dict[str, Any]] = []
    for step in case.steps:
        if isinstance(step, Text):
            events.append({"kind": "delta", "text": step.text})
        elif isinstance(step, Call):
            event: dict[str, Any] = {
                "kind": "tool_call_delta",
                "index": step.index,
                "arguments_fragment": step.fragment,
            }
            if step.name is not None:
                event["name"] = step.name
            if step.call_id is not None:
                event["call_id"] = step.call_id
            events.append(event)
        else:
            usage.append(
                {
                    "kind": "usage",
                    "input_tokens": step.input_tokens,
                    "output_tokens": step.output_tokens,
                }
            )
    events.extend(usage)
    fault = case.fault
    if fault is None or fault.kind == "oversize":
        events.append({"kind": "finish", "finish_reason": case.finish_reason})
    else:
        events.append(
            {
                "kind": "fail",
                "code": str(fault.code),
                "message": f"scripted {fault.kind} ({case.name})",
                "retry_after_ms": fault.retry_after_ms,
            }
        )
    return events


def render_scenario(cases: Sequence[Case], *, scenario_id: str) -> Scenario:
    """One turn per case, in order: call *n* on the adapter plays ``cases[n]``."""
    return parse_scenario(
        {
            "api_version": "runport.mock/v1",
            "id": scenario_id,
            "turns": [{"events": _scenario_events(case)} for case in cases],
        },
        source=f"<runport.conformance {scenario_id}>",
    )


# --------------------------------------------------------------------------------------------
# openai-chat
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """Bytes written in one go (or two, split inside a UTF-8 sequence when ``split``).

    ``owes`` is the number of progress events the client must have delivered once it has
    this frame: the upstream withholds the next frame until the sink has seen that many.
    """

    data: bytes
    owes: int
    split: bool = False


Ending = Literal["end", "reset", "stall"]


@dataclass(frozen=True)
class Response:
    """One scripted HTTP response: status, headers, the frames of its body, how it ends.

    ``chunked`` bodies are sent with chunked transfer encoding (one chunk per frame write);
    others carry ``Content-Length`` of ``declared`` bytes, which may exceed what is sent
    when the ending is a reset or a stall.
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    frames: tuple[Frame, ...]
    chunked: bool
    ending: Ending = "end"
    declared: int = 0
    progress: int = 0


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _sse(value: Any) -> bytes:
    return b"data: " + _dumps(value) + b"\n\n"


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
    return _dumps({"error": {"message": f"{marker} scripted {kind}", "type": kind, "code": code}})


def _status_response(case: Case, marker: str) -> Response:
    fault = case.fault
    assert fault is not None
    assert fault.status is not None
    if fault.status == 429:
        body = _error_body(marker, "rate_limit_error", "rate_limit_exceeded")
    else:
        body = _error_body(marker, "server_error", "server_error")
    headers = [("Content-Type", "application/json")]
    if fault.retry_after_ms is not None:
        headers.append(("Retry-After", str(fault.retry_after_ms // 1000)))
    return Response(
        fault.status, tuple(headers), (Frame(body, 0),), chunked=False, declared=len(body)
    )


def sse_response(case: Case, *, model: str, marker: str) -> Response:
    """The case as a streamed chat-completions response."""
    fault = case.fault
    if fault is not None and fault.kind == "status":
        return _status_response(case, marker)
    frames: list[Frame] = [Frame(b": runport-conformance keep-alive\n\n", 0)]
    owed = 0
    if case.role_frame:
        frames.append(Frame(_chunk(model, {"role": "assistant", "content": ""}), 0))
    usage: dict[str, int] | None = None
    announced: set[int] = set()
    for step in case.steps:
        if isinstance(step, Text):
            owed += 1
            frames.append(Frame(_chunk(model, {"content": step.text}), owed, case.split_utf8))
        elif isinstance(step, Call):
            owed += 1
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
            frames.append(Frame(_chunk(model, {"tool_calls": [entry]}), owed))
        else:
            usage = _usage(step)
    ending: Ending = "end"
    if fault is None or fault.kind == "oversize":
        frames.append(Frame(_chunk(model, {}, case.finish_reason), owed))
        if usage is not None:
            frames.append(
                Frame(
                    _sse(
                        {
                            "id": COMPLETION_ID,
                            "object": "chat.completion.chunk",
                            "created": CREATED,
                            "model": model,
                            "choices": [],
                            "usage": usage,
                        }
                    ),
                    owed,
                )
            )
        frames.append(Frame(b"data: [DONE]\n\n", owed))
    elif fault.kind == "garbage":
        frames.append(Frame(b'data: {"choices": [{"delta": ' + marker.encode() + b"\n\n", owed))
    elif fault.kind == "error_frame":
        frames.append(
            Frame(b"data: " + _error_body(marker, "server_error", "server_error") + b"\n\n", owed)
        )
    elif fault.kind in ("reset", "stall"):
        ending = "reset" if fault.kind == "reset" else "stall"
    if not case.role_frame and not case.steps:
        frames = []
    headers = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"))
    return Response(200, headers, tuple(frames), chunked=True, ending=ending, progress=owed)


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
    if calls:
        message["tool_calls"] = [call for _, call in sorted(calls.items())]
        if not text:
            message["content"] = None
    return message


def json_response(case: Case, *, model: str, marker: str) -> Response:
    """The case as a non-streamed chat-completions response (``stream`` not true)."""
    fault = case.fault
    if fault is not None and fault.kind == "status":
        return _status_response(case, marker)
    headers = (("Content-Type", "application/json"),)
    if fault is not None and fault.kind == "error_frame":
        body = _error_body(marker, "server_error", "server_error")
        return Response(500, headers, (Frame(body, 0),), chunked=False, declared=len(body))
    if fault is not None and fault.kind == "garbage":
        body = b"{not json " + marker.encode()
        return Response(200, headers, (Frame(body, 0),), chunked=False, declared=len(body))
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
    body = _dumps(completion)
    if fault is None or fault.kind == "oversize":
        return Response(200, headers, (Frame(body, 0),), chunked=False, declared=len(body))
    if fault.kind == "eof":
        partial = body[: len(body) // 2] if case.steps else b""
        return Response(200, headers, (Frame(partial, 0),), chunked=False, declared=len(partial))
    ending: Ending = "reset" if fault.kind == "reset" else "stall"
    return Response(
        200,
        headers,
        (Frame(body[: len(body) // 2], 0),),
        chunked=False,
        ending=ending,
        declared=len(body),
    )
