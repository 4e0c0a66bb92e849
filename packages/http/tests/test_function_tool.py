"""``runport.http.tool_declaration`` and ``function_tool``: a tool as each wire declares it;
``own_server_tools``: which server tools go back to a provider."""

from __future__ import annotations

from runport.contracts import ServerToolCall, ServerToolResult, ToolSpec
from runport.http import function_tool, own_server_tools, tool_declaration

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


def test_only_the_server_tools_a_provider_ran_and_typed_go_back_to_it() -> None:
    ran = ServerToolCall(
        call_id="s1", name="web_search", input={}, provider_metadata={"p": {"type": "x_use"}}
    )
    answered = ServerToolResult(
        call_id="s1", name="web_search", output=[], provider_metadata={"p": {"type": "x_result"}}
    )
    other = ServerToolCall(
        call_id="s2", name="web_search", input={}, provider_metadata={"q": {"type": "x_use"}}
    )
    untyped = ServerToolCall(call_id="s3", name="f", input={}, provider_metadata={"p": {}})
    bare = ServerToolCall(call_id="s4", name="f", input={})
    kept = list(own_server_tools([ran, other, untyped, bare, answered], "p"))
    assert kept == [(ran, {"type": "x_use"}), (answered, {"type": "x_result"})]
    assert list(own_server_tools(None, "p")) == []
