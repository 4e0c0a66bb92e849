"""Rewrites a protocol applies to a case its wire cannot say as written (``WireProtocol.play``).

The catalogue writes each case once, with chat-completions' freedoms (calls interleaved, a
call's first fragment carrying arguments). A wire that sends calls one block after another,
or each call whole with its arguments as an object, plays the case through these before it
is rendered — and before the suite derives what it expects (docs/conformance.md). Every
rewrite is idempotent: a rewritten case rewrites as itself.
"""

from __future__ import annotations

import json
from dataclasses import replace

from runport.conformance._cases import Call, Case, Step, Text

__all__ = ["calls_in_blocks", "calls_whole", "compact", "json_answer"]


def compact(arguments: str) -> str:
    """A whole call's arguments as an object read back and written again: compact JSON, keys
    in the order sent, non-ASCII kept."""
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(f"a whole call's arguments must be a JSON object, got {arguments!r}")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _blocks(steps: tuple[Step, ...]) -> list[Step]:
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


def _with_steps(case: Case, steps: list[Step]) -> Case:
    return case if tuple(steps) == case.steps else replace(case, steps=tuple(steps))


def calls_in_blocks(case: Case) -> Case:
    """Each call's fragments together at the place of its first fragment, calls numbered
    from 0 in that order, each announced by an empty fragment (a ``ToolCallDelta`` with no
    arguments), and a call whose arguments never arrive given ``"{}"``."""
    return _with_steps(case, _blocks(case.steps))


def calls_whole(case: Case) -> Case:
    """``calls_in_blocks``, and then each call sent whole: its announcement and one
    fragment, the arguments as ``compact`` JSON."""
    return _with_steps(case, _whole(_blocks(case.steps)))


def json_answer(case: Case) -> bool:
    """Whether the case's answer is a JSON object asked for by an object schema (an answer
    a wire can send as a tool's input, which must be an object)."""
    if case.schema.get("type") != "object" or any(isinstance(s, Call) for s in case.steps):
        return False
    try:
        value = json.loads("".join(s.text for s in case.steps if isinstance(s, Text)))
    except ValueError:
        return False
    return isinstance(value, dict)
