"""``cohere-chat``: a played case as Cohere's v2 chat API streams it — typed server-sent events
(``message-start``; ``content-start`` / ``-delta`` / ``-end`` for text and thinking blocks;
``tool-call-start`` / ``-delta`` / ``-end`` for each call, its arguments in pieces;
``message-end`` the completion marker, with the finish reason and usage); a failure mid-stream
a ``message-end`` whose finish is ``ERROR``; or one JSON body unstreamed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Final

from runport.conformance._cases import (
    Call,
    Case,
    Cite,
    Generated,
    ServerTool,
    Text,
    Thought,
    UsageStep,
    block_numbers,
)
from runport.conformance._rewrites import calls_in_blocks
from runport.conformance._wire_protocol import (
    Frame,
    Transcript,
    WireContext,
    WireProtocol,
    WireRequest,
    json_bytes,
)

__all__ = ["CohereChat"]

MESSAGE_ID: Final = "runport-conformance-message"


def _event(value: dict[str, Any]) -> bytes:
    kind: str = value["type"]
    return b"event: " + kind.encode() + b"\ndata: " + json_bytes(value) + b"\n\n"


def _usage(case: Case) -> dict[str, Any] | None:
    usage = next((step for step in case.steps if isinstance(step, UsageStep)), None)
    if usage is None:
        return None
    counts = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    wire: dict[str, Any] = {"billed_units": counts, "tokens": counts}
    if usage.cache_read:
        wire["cached_tokens"] = usage.cache_read
    return wire


def _arguments(case: Case, index: int) -> str:
    return "".join(s.fragment for s in case.steps if isinstance(s, Call) and s.index == index)


class CohereChat(WireProtocol):
    """Cohere's v2 chat API: ``POST {base_url}/v2/chat`` (``"stream": false`` unstreamed);
    calls in blocks, each with an id, their arguments in pieces; thinking in ``thinking``
    content blocks, one reasoning part each (``{"cohere": {"type": "thinking"}}``), no
    signatures; the cached part of the input as ``cached_tokens``."""

    name: ClassVar[str] = "cohere-chat"
    endpoint: ClassVar[str] = "POST {base_url}/v2/chat"
    finish_reasons: ClassVar[Mapping[str, str]] = {
        "stop": "COMPLETE",
        "tool_calls": "TOOL_CALL",
        "length": "MAX_TOKENS",
    }
    finishes: ClassVar[Mapping[str, str]] = {
        "COMPLETE": "stop",
        "TOOL_CALL": "tool_calls",
        "MAX_TOKENS": "length",
    }
    features: ClassVar[frozenset[str]] = frozenset({"cut_turns", "cache_usage"})

    def recognise(self, request: WireRequest) -> bool | str:
        if request.path != "/v2/chat":
            return self.endpoint
        return isinstance(request.json, dict) and request.json.get("stream") is True

    def play(self, case: Case) -> Case:
        """Calls in blocks, each named by an id (Cohere's ``{name}_{random}`` shape where the
        case gives none); thoughts without signatures."""
        case = super().play(calls_in_blocks(case))
        steps = tuple(
            replace(step, call_id=f"{step.name}_runport{step.index}")
            if isinstance(step, Call) and step.name is not None and step.call_id is None
            else replace(step, signature=None)
            if isinstance(step, Thought) and step.signature is not None
            else step
            for step in case.steps
        )
        return case if steps == case.steps else replace(case, steps=steps)

    def reasoning_metadata(
        self, number: int, block: Sequence[Thought], signature: str | None
    ) -> dict[str, Any] | None:
        return {"cohere": {"type": "thinking"}}

    def stream(self, case: Case, context: WireContext) -> Transcript:
        opening = [
            _event(
                {
                    "id": MESSAGE_ID,
                    "type": "message-start",
                    "delta": {
                        "message": {
                            "role": "assistant",
                            "content": [],
                            "tool_plan": "",
                            "tool_calls": [],
                            "citations": [],
                        }
                    },
                }
            )
        ]
        steps: list[Frame] = []
        content = -1
        open_kind: object = None
        for step, thought in zip(case.steps, block_numbers(case.steps), strict=True):
            if isinstance(step, UsageStep | ServerTool | Cite | Generated) or (
                isinstance(step, Text) and not step.text
            ):
                continue  # the provider's own work: cases that have it are not played here
            kind: object = (
                "text"
                if isinstance(step, Text)
                else ("thinking", thought)
                if isinstance(step, Thought)
                else ("call", step.index)
            )
            if kind != open_kind:
                steps.extend(self._close(open_kind, content))
                open_kind = kind
                if isinstance(step, Call):
                    call = {
                        "id": step.call_id,
                        "type": "function",
                        "function": {"name": step.name, "arguments": ""},
                    }
                    start = {
                        "type": "tool-call-start",
                        "index": step.index,
                        "delta": {"message": {"tool_calls": call}},
                    }
                    steps.append(Frame(_event(start), 1))
                    if not step.fragment:
                        continue
                else:
                    content += 1
                    block = "text" if isinstance(step, Text) else "thinking"
                    start = {
                        "type": "content-start",
                        "index": content,
                        "delta": {"message": {"content": {"type": block, block: ""}}},
                    }
                    steps.append(Frame(_event(start), 0))
            if isinstance(step, Call):
                function = {"arguments": step.fragment}
                delta = {
                    "type": "tool-call-delta",
                    "index": step.index,
                    "delta": {"message": {"tool_calls": {"function": function}}},
                }
            else:
                piece = {"text": step.text} if isinstance(step, Text) else {"thinking": step.text}
                delta = {
                    "type": "content-delta",
                    "index": content,
                    "delta": {"message": {"content": piece}},
                }
            steps.append(Frame(_event(delta), 1))
        steps.extend(self._close(open_kind, content))
        end: dict[str, Any] = {"finish_reason": case.finish_reason}
        usage = _usage(case)
        if usage is not None:
            end["usage"] = usage
        closing = [_event({"type": "message-end", "delta": end})]
        return Transcript(steps, opening=opening, closing=closing)

    def _close(self, kind: object, content: int) -> list[Frame]:
        if kind is None:
            return []
        if isinstance(kind, tuple) and kind[0] == "call":
            return [Frame(_event({"type": "tool-call-end", "index": kind[1]}), 0)]
        return [Frame(_event({"type": "content-end", "index": content}), 0)]

    def body(self, case: Case, context: WireContext) -> bytes:
        content: list[dict[str, Any]] = []
        numbers = block_numbers(case.steps)
        calls: list[dict[str, Any]] = []
        for position, step in enumerate(case.steps):
            if isinstance(step, Thought):
                if position and numbers[position - 1] == numbers[position] and content:
                    content[-1]["thinking"] += step.text
                else:
                    content.append({"type": "thinking", "thinking": step.text})
            elif isinstance(step, Text) and step.text:
                if content and content[-1]["type"] == "text":
                    content[-1]["text"] += step.text
                else:
                    content.append({"type": "text", "text": step.text})
            elif isinstance(step, Call) and step.name is not None:
                function = {"name": step.name, "arguments": _arguments(case, step.index)}
                calls.append({"id": step.call_id, "type": "function", "function": function})
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        answer: dict[str, Any] = {
            "id": MESSAGE_ID,
            "message": message,
            "finish_reason": case.finish_reason,
        }
        usage = _usage(case)
        if usage is not None:
            answer["usage"] = usage
        return json_bytes(answer)

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        delta = {"finish_reason": "ERROR", "error": f"{context.marker} internal server error"}
        return _event({"type": "message-end", "delta": delta})

    def error_body(self, status: int, context: WireContext) -> bytes:
        return json_bytes({"id": MESSAGE_ID, "message": f"{context.marker} scripted HTTP {status}"})

    def __repr__(self) -> str:
        return f"<CohereChat {self.name!r}>"
