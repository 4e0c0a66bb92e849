"""Messages API wire shapes, built from a provider-neutral description of one turn, in the
two forms a server answers in: the event stream and the whole JSON message.

The shapes follow recorded Messages API traffic (``message_start`` with the input usage,
a ``ping`` after the first block opens, ``content_block_*`` per block, ``message_delta`` with
the stop reason and cumulative usage, ``message_stop``), so a scripted upstream — a
conformance renderer included — can reuse them as they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Text:
    pieces: list[str]


@dataclass(frozen=True)
class Thinking:
    """A ``thinking`` block: its ``thinking_delta`` pieces, then one ``signature_delta``
    (none when ``signature`` is empty)."""

    pieces: list[str]
    signature: str = "sig-EqQBCgIYAhIM"


@dataclass(frozen=True)
class Redacted:
    """A ``redacted_thinking`` block: whole at its start, no deltas."""

    data: str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` block; ``kind`` may name a server-side tool block instead."""

    call_id: str
    name: str
    fragments: list[str]
    kind: str = "tool_use"


Block = Text | Thinking | Redacted | ToolUse


@dataclass(frozen=True)
class Turn:
    blocks: list[Block]
    stop_reason: str | None = "end_turn"
    input_tokens: int = 12
    output_tokens: int = 5
    start_output_tokens: int = 1
    cache_read_tokens: int = 0
    ping: bool = True
    extra: list[bytes] = field(default_factory=list)


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _usage(turn: Turn, output: int) -> dict[str, Any]:
    return {
        "input_tokens": turn.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": turn.cache_read_tokens,
        "output_tokens": output,
    }


def stream_events(turn: Turn, *, stop: bool = True) -> list[bytes]:
    """The turn as SSE events, one ``bytes`` per event (``stop``: end with ``message_stop``)."""
    out = [
        event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _usage(turn, turn.start_output_tokens),
                },
            },
        )
    ]
    for index, block in enumerate(turn.blocks):
        out.append(
            event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": _start(block)},
            )
        )
        if index == 0 and turn.ping:
            out.append(event("ping", {"type": "ping"}))
        for delta in _deltas(block):
            out.append(
                event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.extend(turn.extra)
    out.append(
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": turn.output_tokens},
            },
        )
    )
    if stop:
        out.append(event("message_stop", {"type": "message_stop"}))
    return out


def _start(block: Block) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "text", "text": ""}
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": ""}
    if isinstance(block, Redacted):
        return {"type": "redacted_thinking", "data": block.data}
    return {"type": block.kind, "id": block.call_id, "name": block.name, "input": {}}


def _deltas(block: Block) -> list[dict[str, Any]]:
    if isinstance(block, Text):
        return [{"type": "text_delta", "text": piece} for piece in block.pieces]
    if isinstance(block, Thinking):
        deltas = [{"type": "thinking_delta", "thinking": piece} for piece in block.pieces]
        if not block.signature:
            return deltas
        return [*deltas, {"type": "signature_delta", "signature": block.signature}]
    if isinstance(block, Redacted):
        return []
    return [{"type": "input_json_delta", "partial_json": piece} for piece in block.fragments]


def message_body(turn: Turn) -> dict[str, Any]:
    """The same turn as one unstreamed ``message``."""
    content: list[dict[str, Any]] = []
    for block in turn.blocks:
        if isinstance(block, Text):
            content.append({"type": "text", "text": "".join(block.pieces)})
        elif isinstance(block, Thinking):
            content.append(
                {
                    "type": "thinking",
                    "thinking": "".join(block.pieces),
                    "signature": block.signature,
                }
            )
        elif isinstance(block, Redacted):
            content.append({"type": "redacted_thinking", "data": block.data})
        else:
            arguments = "".join(block.fragments)
            content.append(
                {
                    "type": block.kind,
                    "id": block.call_id,
                    "name": block.name,
                    "input": json.loads(arguments) if arguments else {},
                }
            )
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": turn.stop_reason,
        "stop_sequence": None,
        "usage": _usage(turn, turn.output_tokens),
    }


def error_event(kind: str, message: str) -> bytes:
    return event("error", {"type": "error", "error": {"type": kind, "message": message}})


def error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
