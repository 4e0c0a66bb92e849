"""``ollama``: a played case as Ollama's native ``/api/chat`` sends it — one JSON object a line
(``application/x-ndjson``), each with the model, a timestamp and a ``message`` piece, the line
with ``"done": true`` the completion marker (``done_reason`` and the token counts on it); a
failure mid-stream an ``{"error": …}`` line; or one JSON object unstreamed.

``garbage`` picks how the line a client cannot read is broken: a whole line that is not JSON
(``"bad-line"``, the default), or a line cut short as the body ends, without its newline
(``"cut-line"``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar, Final, Literal

from runport.conformance._cases import Call, Case, Text, Thought, UsageStep
from runport.conformance._rewrites import calls_whole
from runport.conformance._wire_protocol import (
    Frame,
    Transcript,
    WireContext,
    WireProtocol,
    WireRequest,
    json_bytes,
)

__all__ = ["Ollama"]

CREATED_AT: Final = "2026-01-01T00:00:00.000000000Z"

Garbage = Literal["bad-line", "cut-line"]


def _line(value: dict[str, Any]) -> bytes:
    return json_bytes(value) + b"\n"


def _calls(case: Case) -> list[dict[str, Any]]:
    """Each call whole, numbered in its turn (in a played case its announcement is followed by
    its one fragment)."""
    steps = case.steps
    whole = [
        (step.name, json.loads(after.fragment))
        for step, after in itertools.pairwise(steps)
        if isinstance(step, Call) and step.name is not None and isinstance(after, Call)
    ]
    return [
        {"function": {"index": index, "name": name, "arguments": arguments}}
        for index, (name, arguments) in enumerate(whole)
    ]


class Ollama(WireProtocol):
    """Ollama's native chat: ``POST {base_url}/api/chat`` with ``"stream": true`` (``false``:
    one object); calls whole, without ids, their arguments objects; thinking in
    ``message.thinking``, kept as one reasoning part; ``done_reason`` ``stop`` even for a turn
    that made calls, ``length`` for one cut at its token limit."""

    name: ClassVar[str] = "ollama"
    endpoint: ClassVar[str] = "POST {base_url}/api/chat"
    content_type: ClassVar[str] = "application/x-ndjson"
    finish_reasons: ClassVar[Mapping[str, str]] = {"tool_calls": "stop"}
    features: ClassVar[frozenset[str]] = frozenset({"cut_turns"})

    def __init__(self, garbage: Garbage = "bad-line") -> None:
        self.garbage = garbage

    def recognise(self, request: WireRequest) -> bool | str:
        if request.path != "/api/chat":
            return self.endpoint
        return not (isinstance(request.json, dict) and request.json.get("stream") is False)

    def play(self, case: Case) -> Case:
        """Calls whole and without ids, thoughts without signatures; a ``stop`` turn that made
        calls finishes ``tool_calls``, as every other protocol's does."""
        case = super().play(calls_whole(case))
        steps = tuple(
            replace(step, call_id=None)
            if isinstance(step, Call) and step.call_id is not None
            else replace(step, signature=None)
            if isinstance(step, Thought) and step.signature is not None
            else step
            for step in case.steps
        )
        if steps != case.steps:
            case = replace(case, steps=steps)
        calls = any(isinstance(step, Call) for step in case.steps)
        if case.finish_reason == "stop" and calls and case.finish != "tool_calls":
            case = replace(case, finish="tool_calls")
        return case

    def reasoning(self, case: Case) -> list[dict[str, Any]]:
        """One part: every thought's text, joined (the wire has no blocks)."""
        thinking = "".join(step.text for step in case.steps if isinstance(step, Thought))
        return [{"text": thinking}] if thinking else []

    def frame(self, payload: bytes) -> bytes:
        return payload + b"\n"

    def _chunk(self, context: WireContext, message: dict[str, Any], **more: Any) -> bytes:
        return _line(
            {
                "model": context.model,
                "created_at": CREATED_AT,
                "message": {"role": "assistant", **message},
                **more,
            }
        )

    def _done(self, case: Case) -> dict[str, Any]:
        done: dict[str, Any] = {"done": True}
        if case.finish_reason is not None:
            done["done_reason"] = case.finish_reason
        done |= {"total_duration": 1000, "load_duration": 10}
        for step in case.steps:
            if isinstance(step, UsageStep):
                done |= {
                    "prompt_eval_count": step.input_tokens,
                    "prompt_eval_duration": 100,
                    "eval_count": step.output_tokens,
                    "eval_duration": 800,
                }
        return done

    def stream(self, case: Case, context: WireContext) -> Transcript:
        frames: list[Frame] = []
        calls = iter(_calls(case))
        message: dict[str, Any]
        for step in case.steps:
            if isinstance(step, Text) and step.text:
                message = {"content": step.text}
                frames.append(Frame(self._chunk(context, message, done=False), 1))
            elif isinstance(step, Thought) and step.text:
                message = {"content": "", "thinking": step.text}
                frames.append(Frame(self._chunk(context, message, done=False), 1))
            elif isinstance(step, Call) and step.name is not None:
                message = {"content": "", "tool_calls": [next(calls)]}
                frames.append(Frame(self._chunk(context, message, done=False), 2))
        closing = [self._chunk(context, {"content": ""}, **self._done(case))]
        return Transcript(frames, closing=closing)

    def body(self, case: Case, context: WireContext) -> bytes:
        message: dict[str, Any] = {
            "content": "".join(step.text for step in case.steps if isinstance(step, Text))
        }
        thinking = "".join(step.text for step in case.steps if isinstance(step, Thought))
        if thinking:
            message["thinking"] = thinking
        calls = _calls(case)
        if calls:
            message["tool_calls"] = calls
        return self._chunk(context, message, **self._done(case)).rstrip(b"\n")

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        return _line({"error": f"{context.marker} model runner has unexpectedly stopped"})

    def garbage_frame(self, context: WireContext) -> bytes:
        line = self._chunk(context, {"content": "x"}, done=False)
        if self.garbage == "cut-line":
            return line[: len(line) // 2]
        return b'{"model": "' + context.marker.encode() + b'", "message": {\n'

    def error_body(self, status: int, context: WireContext) -> bytes:
        return json_bytes({"error": f"{context.marker} scripted HTTP {status}"})

    def __repr__(self) -> str:
        return f"<Ollama {self.name!r} garbage={self.garbage!r}>"
