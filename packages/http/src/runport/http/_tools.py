"""How a provider declares a tool: the one shape every wire shares, and the chat-completions
dialect's wrapping of it, which several providers speak; and which of a turn's server tools
go back to a provider."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from runport.contracts import ServerToolCall, ServerToolResult, ToolSpec

__all__ = ["function_tool", "own_server_tools", "tool_declaration"]

_OWN_PARAMETERS: Any = object()


def tool_declaration(
    tool: ToolSpec, field: str = "parameters", schema: Any = _OWN_PARAMETERS
) -> dict[str, Any]:
    """``{"name", "description"?, field: schema}``, the way every provider declares a tool (the
    description left out when it is empty): ``field`` is the wire's name for the parameters'
    JSON Schema (``input_schema`` for Anthropic, ``parametersJsonSchema`` for Gemini), and
    ``schema`` what goes under it when the wire wraps the tool's ``parameters``
    (``{"json": …}`` for Bedrock's Converse)."""
    wire: dict[str, Any] = {"name": tool.name}
    if tool.description:
        wire["description"] = tool.description
    wire[field] = tool.parameters if schema is _OWN_PARAMETERS else schema
    return wire


def function_tool(tool: ToolSpec) -> dict[str, Any]:
    """``tool`` as a chat-completions ``tools`` entry: ``{"type": "function", "function":
    {"name", "description"?, "parameters"}}`` (OpenAI's chat completions, Ollama's and Cohere's
    chat APIs); the description is left out when it is empty."""
    return {"type": "function", "function": tool_declaration(tool)}


def own_server_tools(
    tools: Iterable[ServerToolCall | ServerToolResult] | None, provider: str
) -> Iterator[tuple[ServerToolCall | ServerToolResult, dict[str, Any]]]:
    """The server tools of an assistant turn that ``provider`` ran, in their order, each with
    its provider metadata under ``provider`` (which names its block's ``type``): what a codec
    sends back to continue the conversation. Those another provider ran are left out."""
    for tool in tools or ():
        mine = (tool.provider_metadata or {}).get(provider)
        if isinstance(mine, dict) and isinstance(mine.get("type"), str):
            yield tool, mine
