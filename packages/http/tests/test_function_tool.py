"""``runport.http.tool_declaration`` and ``function_tool``: a tool as each wire declares it."""

from __future__ import annotations

from runport.contracts import ToolSpec
from runport.http import function_tool, tool_declaration

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


def test_a_declaration_puts_the_schema_under_the_wires_own_field() -> None:
    tool = ToolSpec(name="weather", description="Today's weather", parameters=SCHEMA)
    assert tool_declaration(tool, "input_schema") == {
        "name": "weather",
        "description": "Today's weather",
        "input_schema": SCHEMA,
    }
    wrapped = tool_declaration(
        ToolSpec(name="w", parameters=SCHEMA), "inputSchema", {"json": SCHEMA}
    )
    assert wrapped == {"name": "w", "inputSchema": {"json": SCHEMA}}
