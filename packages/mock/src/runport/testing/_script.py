"""A model's turns written as Python values, made a scenario (no pytest here)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pydantic import JsonValue

from runport.core import Scenario, parse_scenario

__all__ = ["Call", "Turn", "call", "script"]


@dataclass(frozen=True)
class Call:
    """A tool call a scripted turn makes (``call``)."""

    name: str
    arguments: JsonValue = field(default_factory=dict)
    call_id: str | None = None


def call(name: str, arguments: JsonValue = None, *, call_id: str | None = None) -> Call:
    """A tool call for a scripted turn: ``call("get_weather", {"city": "Delft"})``. Its id is
    ``call_1``, ``call_2``, … in the order of the script unless ``call_id`` is given."""
    return Call(name, {} if arguments is None else arguments, call_id)


Turn: TypeAlias = str | Call | Sequence[str | Call] | Mapping[str, Any]
"""One model turn: a text (one ``Delta``), a ``Call``, a sequence of both (streamed in that
order), or a ``runport.mock/v1`` turn as a mapping (``{"events": [...]}``, docs/scenarios.md)."""


def script(*turns: Turn, scenario_id: str = "scripted") -> Scenario:
    """The scenario that plays ``turns`` one per model call. A turn with a call finishes with
    ``tool_calls``, any other with ``stop``. A bad turn is refused with ``TypeError`` or the
    scenario's own ``ValueError``, naming it."""
    if not turns:
        raise TypeError("script a model with at least one turn, e.g. scripted_model('Hello')")
    calls = iter(range(1, 1 << 30))
    document = {
        "api_version": "runport.mock/v1",
        "id": scenario_id,
        "turns": [_turn(turn, number, calls) for number, turn in enumerate(turns, 1)],
    }
    return parse_scenario(document)


def _turn(turn: Turn, number: int, calls: Any) -> Mapping[str, Any]:
    if isinstance(turn, Mapping):
        return turn
    pieces: Sequence[object] = [turn] if isinstance(turn, str | Call) else turn
    if isinstance(turn, bytes) or not isinstance(pieces, Sequence) or not pieces:
        raise TypeError(
            f"turn {number}: a text, call(...), a non-empty list of them or a runport.mock/v1 "
            f"turn mapping, not {type(turn).__name__}"
        )
    events: list[dict[str, Any]] = []
    index = 0
    for piece in pieces:
        if isinstance(piece, str):
            if not piece:
                raise TypeError(f"turn {number}: an empty text streams nothing (no Delta)")
            events.append({"kind": "delta", "text": piece})
        elif isinstance(piece, Call):
            events.append(
                {
                    "kind": "tool_call_delta",
                    "index": index,
                    "call_id": piece.call_id or f"call_{next(calls)}",
                    "name": piece.name,
                    "arguments_fragment": json.dumps(piece.arguments),
                }
            )
            index += 1
        else:
            raise TypeError(
                f"turn {number}: {type(piece).__name__} is neither a text nor a call(...)"
            )
    events.append({"kind": "finish", "finish_reason": "tool_calls" if index else "stop"})
    return {"events": events}
