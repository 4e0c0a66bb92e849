"""A tool as the chat-completions dialect names it, which several providers speak."""

from __future__ import annotations

from typing import Any

from runport.contracts import ToolSpec

__all__ = ["function_tool"]


def function_tool(tool: ToolSpec) -> dict[str, Any]:
    """``tool`` as a chat-completions ``tools`` entry: ``{"type": "function", "function":
    {"name", "description"?, "parameters"}}`` (OpenAI's chat completions, Ollama's and Cohere's
    chat APIs); the description is left out when it is empty."""
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = tool.parameters
    return {"type": "function", "function": function}
