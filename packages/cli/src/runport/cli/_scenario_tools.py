"""The tools a multi-turn scenario's run is offered: each answers from the scenario.

A scripted model does not read what a tool returns — its next turn is already written — so a
scenario needs no code to be played as a run: every tool the contract offers is answered by
the scenario itself. A call is matched to the scripted call with the same name and arguments.
Its answer is the result the scenario states for that call (by call id, else by tool name) in
the turn's optional ``tool_results`` mapping, and JSON ``null`` where it states none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from runport.application import Tool
from runport.contracts import ToolSpec
from runport.core import (
    JsonLimitError,
    Scenario,
    ScenarioTurn,
    ToolCallDeltaEvent,
    parse_json_text,
)


@dataclass
class _ScriptedCall:
    call_id: str
    name: str
    arguments: Any
    answer: JsonValue
    answered: bool = False


def stated_results(turn: ScenarioTurn) -> Mapping[str, JsonValue]:
    """The tool results a turn states, keyed by call id (none: an empty mapping)."""
    return turn.tool_results


def _scripted_calls(turn: ScenarioTurn) -> list[_ScriptedCall]:
    fragments: dict[int, list[str]] = {}
    first: dict[int, ToolCallDeltaEvent] = {}
    for event in turn.events:
        if isinstance(event, ToolCallDeltaEvent):
            first.setdefault(event.index, event)
            fragments.setdefault(event.index, []).append(event.arguments_fragment)
    stated = stated_results(turn)
    calls = []
    for index in sorted(first):
        event = first[index]
        try:
            parsed, value = parse_json_text("".join(fragments[index]))
        except JsonLimitError:
            parsed, value = False, None
        arguments = value if parsed else None
        answer = stated.get(event.call_id, stated.get(event.name))
        calls.append(_ScriptedCall(event.call_id, event.name, arguments, answer))
    return calls


class ScenarioTools:
    """Every tool of a contract, answered from one scenario (a fresh instance per run)."""

    def __init__(self, scenario: Scenario) -> None:
        self._calls = [call for turn in scenario.turns for call in _scripted_calls(turn)]

    def tools(self, specs: Sequence[ToolSpec]) -> list[Tool]:
        return [
            Tool(
                name=spec.name,
                description=spec.description,
                parameters=spec.parameters,
                function=self._answerer(spec.name),
            )
            for spec in specs
        ]

    def _answerer(self, name: str) -> Any:
        def answer(**arguments: Any) -> JsonValue:
            for call in self._calls:
                if not call.answered and call.name == name and call.arguments == arguments:
                    call.answered = True
                    return call.answer
            return None

        return answer
