"""``bedrock-converse``: a played case as Amazon Bedrock's ConverseStream sends it — events in
``application/vnd.amazon.eventstream`` messages (``messageStart``, ``contentBlockStart`` /
``Delta`` / ``Stop``, ``messageStop`` the completion marker, ``metadata`` with the usage after
it), a failure mid-stream an ``exception`` message; or Converse's one JSON body.

``garbage`` picks how the frame a client cannot read is broken: a message whose CRC does not
match (``"message-crc"``, the default), a prelude whose CRC does not match
(``"prelude-crc"``), or a prelude cut short as the body ends (``"cut-prelude"``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Final, Literal

from runport.conformance._cases import (
    Call,
    Case,
    Provided,
    Text,
    Thought,
    UsageStep,
    block_numbers,
)
from runport.conformance._protocols._request_shape import converse_shape, shape_problems
from runport.conformance._rewrites import calls_in_blocks
from runport.conformance._wire_protocol import (
    Frame,
    Transcript,
    WireContext,
    WireProtocol,
    WireRequest,
    json_bytes,
)
from runport.conformance.eventstream import event_message, exception_message
from runport.contracts import ExecutionRequest

__all__ = ["BedrockConverse"]

_PATH: Final = re.compile(r"/model/([^/]+)/(converse-stream|converse)")
_EXCEPTIONS: Final = {429: "ThrottlingException", 503: "ServiceUnavailableException"}

Garbage = Literal["message-crc", "prelude-crc", "cut-prelude"]


def _usage(case: Case) -> dict[str, Any] | None:
    usage = next((step for step in case.steps if isinstance(step, UsageStep)), None)
    if usage is None:
        return None
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.input_tokens + usage.output_tokens,
    }


def _input(case: Case, index: int) -> Any:
    return json.loads(
        "".join(s.fragment for s in case.steps if isinstance(s, Call) and s.index == index)
    )


class BedrockConverse(WireProtocol):
    """Amazon Bedrock's Converse API: ``POST {base_url}/model/{modelId}/converse-stream``
    (``/converse`` unstreamed); content blocks one after another (calls in blocks, each with
    a ``toolUseId``), reasoning as ``reasoningContent`` with its signature kept as
    ``{"bedrock": {"signature": …}}``."""

    name: ClassVar[str] = "bedrock-converse"
    endpoint: ClassVar[str] = "POST {base_url}/model/{modelId}/converse-stream"
    content_type: ClassVar[str] = "application/vnd.amazon.eventstream"
    finish_reasons: ClassVar[Mapping[str, str]] = {
        "stop": "end_turn",
        "tool_calls": "tool_use",
        "length": "max_tokens",
        "content_filter": "content_filtered",
    }
    finishes: ClassVar[Mapping[str, str]] = {wire: own for own, wire in finish_reasons.items()}

    def __init__(self, garbage: Garbage = "message-crc") -> None:
        self.garbage = garbage

    def request_problems(self, request: WireRequest, sent: ExecutionRequest) -> list[str]:
        return shape_problems(converse_shape(request.json), sent)

    def recognise(self, request: WireRequest) -> bool | str:
        found = _PATH.fullmatch(request.path)
        if found is None:
            return self.endpoint
        return found[2] == "converse-stream"

    def play(self, case: Case) -> Case:
        case = super().play(calls_in_blocks(case))
        steps = tuple(
            replace(step, call_id=f"tooluse_runport_{step.index}")
            if isinstance(step, Call) and step.name is not None and step.call_id is None
            else step
            for step in case.steps
        )
        return case if steps == case.steps else replace(case, steps=steps)

    def reasoning_metadata(
        self, number: int, block: Sequence[Thought], signature: str | None
    ) -> dict[str, Any] | None:
        return None if signature is None else {"bedrock": {"signature": signature}}

    def stream(self, case: Case, context: WireContext) -> Transcript:
        opening = [event_message("messageStart", {"role": "assistant"})]
        steps: list[Frame] = []
        block = -1
        open_kind: object = None
        for step, thought in zip(case.steps, block_numbers(case.steps), strict=True):
            if isinstance(step, UsageStep | Provided) or (isinstance(step, Text) and not step.text):
                continue
            kind: object = (
                "text"
                if isinstance(step, Text)
                else ("thought", thought)
                if isinstance(step, Thought)
                else ("call", step.index)
            )
            if kind != open_kind:
                if open_kind is not None:
                    stop = {"contentBlockIndex": block}
                    steps.append(Frame(event_message("contentBlockStop", stop), 0))
                block += 1
                open_kind = kind
                if isinstance(step, Call):
                    start = {"toolUse": {"toolUseId": step.call_id, "name": step.name}}
                    event = {"contentBlockIndex": block, "start": start}
                    steps.append(Frame(event_message("contentBlockStart", event), 1))
                    continue
            delta: dict[str, Any]
            if isinstance(step, Text):
                delta, carries = {"text": step.text}, 1
            elif isinstance(step, Call):
                delta, carries = {"toolUse": {"input": step.fragment}}, 1
            else:
                if step.text:
                    reasoning = {"reasoningContent": {"text": step.text}}
                    event = {"contentBlockIndex": block, "delta": reasoning}
                    steps.append(Frame(event_message("contentBlockDelta", event), 1))
                if step.signature is None:
                    continue
                delta, carries = {"reasoningContent": {"signature": step.signature}}, 0
            event = {"contentBlockIndex": block, "delta": delta}
            steps.append(Frame(event_message("contentBlockDelta", event), carries))
        if open_kind is not None:
            steps.append(Frame(event_message("contentBlockStop", {"contentBlockIndex": block}), 0))
        closing = [event_message("messageStop", {"stopReason": case.finish_reason})]
        usage = _usage(case)
        if usage is not None:
            closing.append(event_message("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
        return Transcript(steps, opening=opening, closing=closing)

    def body(self, case: Case, context: WireContext) -> bytes:
        content: list[dict[str, Any]] = []
        numbers = block_numbers(case.steps)
        for position, step in enumerate(case.steps):
            if isinstance(step, Thought):
                if position and numbers[position - 1] == numbers[position] and content:
                    text = content[-1]["reasoningContent"]["reasoningText"]
                    text["text"] += step.text
                else:
                    content.append({"reasoningContent": {"reasoningText": {"text": step.text}}})
                if step.signature is not None:
                    content[-1]["reasoningContent"]["reasoningText"]["signature"] = step.signature
            elif isinstance(step, Text) and step.text:
                if content and "text" in content[-1]:
                    content[-1]["text"] += step.text
                else:
                    content.append({"text": step.text})
            elif isinstance(step, Call) and step.name is not None:
                use = {"toolUseId": step.call_id, "name": step.name}
                content.append({"toolUse": {**use, "input": _input(case, step.index)}})
        answer: dict[str, Any] = {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": case.finish_reason,
            "metrics": {"latencyMs": 1},
        }
        usage = _usage(case)
        if usage is not None:
            answer["usage"] = usage
        return json_bytes(answer)

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        return exception_message(
            "modelStreamErrorException", f"{context.marker} scripted model stream error"
        )

    def planted_error_frame(self, case: Case, context: WireContext, **planted: str) -> bytes:
        """``error_frame`` with ``planted`` beside its message (law 10's canary): a binary
        frame is made again, CRCs and all, where a text frame's JSON would be patched."""
        return exception_message(
            "modelStreamErrorException",
            f"{context.marker} scripted model stream error",
            **planted,
        )

    def garbage_frame(self, context: WireContext) -> bytes:
        frame = bytearray(
            event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}})
        )
        if self.garbage == "cut-prelude":
            return bytes(frame[:7])
        at = 9 if self.garbage == "prelude-crc" else len(frame) - 1
        frame[at] ^= 0xFF
        return bytes(frame)

    def error_body(self, status: int, context: WireContext) -> bytes:
        kind = _EXCEPTIONS.get(status, "ModelErrorException")
        return json_bytes({"message": f"{context.marker} scripted {kind}"})

    def __repr__(self) -> str:
        return f"<BedrockConverse {self.name!r} garbage={self.garbage!r}>"
