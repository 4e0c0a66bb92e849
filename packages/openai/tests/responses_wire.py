"""Responses API answers written as the API writes them, for the tests: a turn is a list of
output items (``Message``, ``Reasoning``, ``FunctionCall``, ``BuiltIn``); ``stream_events``
gives its event stream, ``response_body`` its response object."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MODEL = "gpt-test"


@dataclass(frozen=True)
class Message:
    pieces: tuple[str, ...]
    refusal: bool = False


@dataclass(frozen=True)
class Reasoning:
    summaries: tuple[tuple[str, ...], ...] = ()
    """Each summary part's deltas."""
    encrypted: str | None = None
    content: tuple[str, ...] = ()
    """``reasoning_text`` deltas (open models that stream their reasoning)."""


@dataclass(frozen=True)
class FunctionCall:
    name: str
    call_id: str
    fragments: tuple[str, ...]


@dataclass(frozen=True)
class BuiltIn:
    kind: str = "web_search_call"


Item = Message | Reasoning | FunctionCall | BuiltIn


@dataclass
class Turn:
    items: list[Item]
    status: str = "completed"
    usage: dict[str, Any] | None = field(
        default_factory=lambda: {
            "input_tokens": 11,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 3},
            "total_tokens": 18,
        }
    )
    incomplete: str | None = None
    error: dict[str, Any] | None = None


def sse(value: dict[str, Any]) -> bytes:
    return f"event: {value['type']}\ndata: {json.dumps(value)}\n\n".encode()


def item_id(position: int, item: Item) -> str:
    prefix = {Message: "msg", Reasoning: "rs", FunctionCall: "fc", BuiltIn: "ws"}[type(item)]
    return f"{prefix}_{position}"


def done_item(position: int, item: Item) -> dict[str, Any]:
    ident = item_id(position, item)
    if isinstance(item, Message):
        text = "".join(item.pieces)
        part = (
            {"type": "refusal", "refusal": text}
            if item.refusal
            else {"type": "output_text", "text": text, "annotations": []}
        )
        return {
            "id": ident,
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }
    if isinstance(item, Reasoning):
        done: dict[str, Any] = {
            "id": ident,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "".join(p)} for p in item.summaries],
        }
        if item.content:
            done["content"] = [{"type": "reasoning_text", "text": "".join(item.content)}]
        if item.encrypted is not None:
            done["encrypted_content"] = item.encrypted
        return done
    if isinstance(item, FunctionCall):
        return {
            "id": ident,
            "type": "function_call",
            "status": "completed",
            "arguments": "".join(item.fragments),
            "call_id": item.call_id,
            "name": item.name,
        }
    if item.kind == "mcp_call":  # an MCP server's tool, as the provider called it
        return {
            "id": ident,
            "type": "mcp_call",
            "name": "lookup",
            "server_label": "docs",
            "arguments": "{}",
            "output": "ok",
        }
    return {"id": ident, "type": item.kind, "status": "completed"}


def response_object(turn: Turn, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_test",
        "object": "response",
        "created_at": 1,
        "status": turn.status,
        "error": turn.error,
        "incomplete_details": {"reason": turn.incomplete} if turn.incomplete else None,
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": turn.usage,
    }


def _item_events(position: int, item: Item) -> list[dict[str, Any]]:
    ident = item_id(position, item)
    at = {"item_id": ident, "output_index": position}
    done = done_item(position, item)
    events: list[dict[str, Any]] = []
    if isinstance(item, Message):
        added = {**done, "status": "in_progress", "content": []}
        events.append(
            {"type": "response.output_item.added", "output_index": position, "item": added}
        )
        part = done["content"][0]
        empty = {**part, "refusal": ""} if item.refusal else {**part, "text": ""}
        events.append(
            {"type": "response.content_part.added", **at, "content_index": 0, "part": empty}
        )
        kind = "response.refusal.delta" if item.refusal else "response.output_text.delta"
        for piece in item.pieces:
            events.append({"type": kind, **at, "content_index": 0, "delta": piece})
        events.append(
            {"type": "response.content_part.done", **at, "content_index": 0, "part": part}
        )
    elif isinstance(item, Reasoning):
        added = {"id": ident, "type": "reasoning", "summary": []}
        events.append(
            {"type": "response.output_item.added", "output_index": position, "item": added}
        )
        for index, part in enumerate(item.summaries):
            events.append(
                {
                    "type": "response.reasoning_summary_part.added",
                    **at,
                    "summary_index": index,
                    "part": {"type": "summary_text", "text": ""},
                }
            )
            for piece in part:
                events.append(
                    {
                        "type": "response.reasoning_summary_text.delta",
                        **at,
                        "summary_index": index,
                        "delta": piece,
                    }
                )
        for piece in item.content:
            events.append(
                {"type": "response.reasoning_text.delta", **at, "content_index": 0, "delta": piece}
            )
    elif isinstance(item, FunctionCall):
        added = {**done, "status": "in_progress", "arguments": ""}
        events.append(
            {"type": "response.output_item.added", "output_index": position, "item": added}
        )
        for piece in item.fragments:
            events.append({"type": "response.function_call_arguments.delta", **at, "delta": piece})
        events.append(
            {"type": "response.function_call_arguments.done", **at, "arguments": done["arguments"]}
        )
    else:
        events.append(
            {"type": "response.output_item.added", "output_index": position, "item": done}
        )
    events.append({"type": "response.output_item.done", "output_index": position, "item": done})
    return events


def stream_events(turn: Turn, *, terminal: bool = True) -> list[bytes]:
    """The turn's events, each an SSE frame (``terminal=False``: cut before the marker)."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response_object(Turn([], "in_progress"), [])}
    ]
    output = []
    for position, item in enumerate(turn.items):
        events += _item_events(position, item)
        output.append(done_item(position, item))
    if terminal:
        events.append(
            {"type": f"response.{turn.status}", "response": response_object(turn, output)}
        )
    return [sse({**event, "sequence_number": n}) for n, event in enumerate(events)]


def response_body(turn: Turn) -> dict[str, Any]:
    return response_object(turn, [done_item(p, item) for p, item in enumerate(turn.items)])
