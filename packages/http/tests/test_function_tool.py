"""``runport.http.function_tool``: a tool as the chat-completions dialect names it."""

from __future__ import annotations

from runport.contracts import ToolSpec
from runport.http import function_tool

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def test_a_described_tool_keeps_its_description_before_its_parameters() -> None:
    wire = function_tool(ToolSpec(name="weather", description="Today's weather", parameters=SCHEMA))
    assert wire == {
        "type": "function",
        "function": {"name": "weather", "description": "Today's weather", "parameters": SCHEMA},
    }
    assert list(wire["function"]) == ["name", "description", "parameters"]


def test_an_empty_description_is_left_out() -> None:
    wire = function_tool(ToolSpec(name="weather", description="", parameters=SCHEMA))
    assert wire == {"type": "function", "function": {"name": "weather", "parameters": SCHEMA}}
