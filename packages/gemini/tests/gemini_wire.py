"""Gemini ``generateContent`` wire shapes, built from a provider-neutral description of one
turn, in the two forms the API answers in: ``streamGenerateContent?alt=sse`` chunks and one
whole ``GenerateContentResponse``.

The shapes follow recorded traffic (CRLF-terminated SSE frames, every chunk carrying
``usageMetadata``, the last one the candidate's ``finishReason``), so a scripted upstream — a
conformance renderer included — can reuse them as they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"text": value, **extra}


def thought(value: str) -> dict[str, Any]:
    return {"text": value, "thought": True}


def call(
    name: str, args: dict[str, Any] | None = None, call_id: str | None = None
) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if args is not None:
        function["args"] = args
    if call_id is not None:
        function["id"] = call_id
    return {"functionCall": function}


@dataclass(frozen=True)
class Turn:
    """``chunks``: the parts each streamed chunk carries (the last one also the finish)."""

    chunks: list[list[dict[str, Any]]]
    finish: str | None = "STOP"
    prompt_tokens: int = 9
    candidates_tokens: int = 4
    thoughts_tokens: int | None = None


def _usage(turn: Turn, candidates: int) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "promptTokenCount": turn.prompt_tokens,
        "candidatesTokenCount": candidates,
        "totalTokenCount": turn.prompt_tokens + candidates + (turn.thoughts_tokens or 0),
    }
    if turn.thoughts_tokens is not None:
        usage["thoughtsTokenCount"] = turn.thoughts_tokens
    return usage


def _chunk(
    parts: list[dict[str, Any]], usage: dict[str, Any], finish: str | None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": "gemini-test",
        "responseId": "resp-0001",
    }


def frame(body: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\r\n\r\n"


def stream_chunks(turn: Turn) -> list[bytes]:
    """The turn as SSE frames, one ``bytes`` per chunk (no finish when ``turn.finish`` is
    ``None``: a truncated stream)."""
    out = []
    last = len(turn.chunks) - 1
    for position, parts in enumerate(turn.chunks):
        growing = turn.candidates_tokens if position == last else position + 1
        out.append(
            frame(_chunk(parts, _usage(turn, growing), turn.finish if position == last else None))
        )
    return out


def response_body(turn: Turn) -> dict[str, Any]:
    """The same turn as one unstreamed response."""
    parts = [part for chunk in turn.chunks for part in chunk]
    return _chunk(parts, _usage(turn, turn.candidates_tokens), turn.finish)


def error_frame(code: int, status: str, message: str) -> bytes:
    return frame({"error": {"code": code, "message": message, "status": status}})


def error_body(code: int, status: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "status": status}}).encode()
