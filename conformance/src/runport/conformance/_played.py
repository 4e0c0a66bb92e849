"""A case as a protocol can play it: the fragmentation and finish reason its wire dictates.

The catalogue writes each case once, with chat-completions' freedoms (calls interleaved, a
call's first fragment carrying arguments, ``stop`` / ``tool_calls``). Anthropic's Messages
API, OpenAI's Responses API and Gemini cannot say all of that, so before a case is rendered
for them — and before the suite derives what it expects — it is rewritten by the rules below
(docs/conformance.md).
Every rule is idempotent: a played case plays as itself, so the renderers may apply it again.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Final

from runport.conformance._cases import Call, Case, Step, Text, Thought

__all__ = ["FINISH_REASONS", "json_answer", "played_as"]

FINISH_REASONS: Final = {
    "anthropic-messages": {
        "stop": "end_turn",
        "tool_calls": "tool_use",
        "length": "max_tokens",
    },
    "openai-responses": {},
    "gemini": {
        "stop": "STOP",
        "tool_calls": "STOP",
        "length": "MAX_TOKENS",
        "content_filter": "SAFETY",
    },
}
"""The finish reason each protocol sends for chat-completions' (kept as sent, so expected).
The Responses API sends none: a completed turn is ``tool_calls`` when it made calls, else
``stop``; an incomplete one names its reason (``length``, ``content_filter``)."""


def compact(arguments: str) -> str:
    """A whole call's arguments as Gemini's assembled object reads back: compact JSON, keys in
    the order sent, non-ASCII kept."""
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(f"a gemini call's arguments must be a JSON object, got {arguments!r}")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _blocks(steps: tuple[Step, ...]) -> list[Step]:
    """Each call contiguous at its first step, numbered in order of first appearance,
    announced by an empty fragment; a call whose arguments never arrive gets ``{}``."""
    numbers: dict[int, int] = {}
    calls: dict[int, list[Call]] = {}
    order: list[Step | int] = []
    for step in steps:
        if isinstance(step, Call):
            if step.index not in numbers:
                number = numbers[step.index] = len(numbers)
                calls[number] = [Call(number, "", name=step.name, call_id=step.call_id)]
                order.append(number)
            if step.fragment:
                calls[numbers[step.index]].append(Call(numbers[step.index], step.fragment))
        else:
            order.append(step)
    played: list[Step] = []
    for item in order:
        if isinstance(item, int):
            block = calls[item]
            if len(block) == 1:
                block.append(Call(item, "{}"))
            played += block
        else:
            played.append(item)
    return played


def _whole(steps: list[Step]) -> list[Step]:
    """Gemini: a call is one part, so its fragments are its announcement and one fragment."""
    played: list[Step] = []
    pending: dict[int, list[str]] = {}
    for step in steps:
        if isinstance(step, Call) and step.name is None:
            pending[step.index].append(step.fragment)
            continue
        if isinstance(step, Call):
            pending[step.index] = []
        played.append(step)
    result: list[Step] = []
    for step in played:
        result.append(step)
        if isinstance(step, Call):
            result.append(Call(step.index, compact("".join(pending[step.index]))))
    return result


def json_answer(case: Case) -> bool:
    """Whether the case's answer is a JSON object asked for by an object schema — what the
    Messages API can give as a forced tool's input (``input`` must be an object)."""
    if case.schema.get("type") != "object" or any(isinstance(s, Call) for s in case.steps):
        return False
    try:
        value = json.loads("".join(s.text for s in case.steps if isinstance(s, Text)))
    except ValueError:
        return False
    return isinstance(value, dict)


def _unspaced(steps: list[Step]) -> list[Step]:
    """Anthropic, a JSON answer: each text step without the whitespace outside strings (what
    the stream and the message body agree on when the answer is a tool's input: the stream
    keeps the model's spacing, the body the server's), the spaced text kept as ``wire``."""
    played: list[Step] = []
    in_string = escaped = False
    for step in steps:
        if not isinstance(step, Text):
            played.append(step)
            continue
        kept: list[str] = []
        for char in step.text:
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char in " \t\n\r":
                continue
            kept.append(char)
        played.append(Text("".join(kept), wire=step.wire or step.text))
    return played


def _reasoning(case: Case, protocol: str | None) -> Case:
    """A case with thoughts follows ``protocol``'s reasoning conventions (``dialect``); a
    redacted block or a signature without text is Anthropic's alone, so other protocols play
    it as nothing."""
    if not case.reasons or protocol is None or case.dialect == protocol:
        return case
    steps = case.steps
    if protocol != "anthropic-messages":  # no redacted block, no signature without text
        steps = tuple(s for s in steps if not (isinstance(s, Thought) and not s.text))
    return replace(case, steps=steps, dialect=protocol)


def played_as(case: Case, protocol: str | None) -> Case:
    """``case`` as ``protocol`` plays it (unchanged for ``scenario``, ``openai-chat``, none,
    but for the conventions its reasoning follows)."""
    case = _reasoning(case, protocol)
    reasons = FINISH_REASONS.get(protocol or "")
    if reasons is None:
        return case
    steps = _blocks(case.steps)
    if protocol == "gemini":
        steps = _whole(steps)
    elif protocol == "anthropic-messages" and json_answer(case):
        steps = _unspaced(steps)
    reason = case.finish_reason
    if reason is not None:
        reason = reasons.get(reason, reason)
    if protocol == "openai-responses" and reason in ("stop", "tool_calls"):
        reason = "tool_calls" if any(isinstance(s, Call) for s in steps) else "stop"
    if tuple(steps) == case.steps and reason == case.finish_reason:
        return case
    return replace(case, steps=tuple(steps), finish_reason=reason)
