from __future__ import annotations

from datetime import date

import pytest
from pydantic import BaseModel

from runport.application import Tool, repair_history
from runport.application._tools import ToolArgumentsError, tool_result_text
from runport.contracts import Message, ToolCall


def _calls(*ids: str) -> Message:
    return Message(
        role="assistant",
        content="",
        tool_calls=[ToolCall(call_id=i, name="t", arguments={}) for i in ids],
    )


def test_a_complete_history_is_left_alone() -> None:
    history = [
        Message(role="user", content="q"),
        _calls("a"),
        Message(role="tool", content="r", tool_call_id="a"),
        Message(role="assistant", content="done"),
    ]
    assert repair_history(history) == (history, [])


def test_a_missing_result_is_synthesized_after_the_existing_ones() -> None:
    repaired, warnings = repair_history(
        [_calls("a", "b"), Message(role="tool", content="ra", tool_call_id="a")]
    )
    assert [(m.role, m.tool_call_id) for m in repaired] == [
        ("assistant", None),
        ("tool", "a"),
        ("tool", "b"),
    ]
    assert repaired[2].content == "interrupted before execution; no result was produced"
    assert warnings == ["history: tool call 'b' (t) had no result; a neutral one was added"]


def test_an_orphan_result_and_a_duplicate_result_are_dropped() -> None:
    repaired, warnings = repair_history(
        [
            Message(role="tool", content="x", tool_call_id="zz"),
            _calls("a"),
            Message(role="tool", content="1", tool_call_id="a"),
            Message(role="tool", content="2", tool_call_id="a"),
        ]
    )
    assert [m.content for m in repaired] == ["", "1"]
    assert len(warnings) == 2


class Point(BaseModel):
    x: int
    y: int


def test_tool_arguments_are_validated_by_the_signature() -> None:
    def move(to: Point, on: date) -> str:
        return f"{to.x},{to.y} on {on.isoformat()}"

    tool = Tool.from_function(move)
    assert tool.parameters["required"] == ["to", "on"]
    assert tool.call({"to": {"x": 1, "y": 2}, "on": "2026-01-02"}) == "1,2 on 2026-01-02"
    with pytest.raises(ToolArgumentsError):
        tool.call({"to": {"x": "a", "y": 2}, "on": "2026-01-02"})
    assert tool.spec().name == "move"


def test_variadic_functions_cannot_be_tools() -> None:
    def anything(*args: int) -> None:
        return None

    with pytest.raises(TypeError, match="args"):
        Tool.from_function(anything)


def test_tool_results_are_strings_or_compact_sorted_json() -> None:
    assert tool_result_text("as is") == "as is"
    assert tool_result_text({"b": 1, "a": [1.0, "é"]}) == '{"a":[1.0,"é"],"b":1}'
    assert tool_result_text(Point(x=1, y=2)) == '{"x":1,"y":2}'
