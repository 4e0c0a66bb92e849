"""runport's wire types as a Messages API request body (docs/providers-anthropic-gemini.md).

Structured output goes through a forced tool whose input is the answer (ADR 0019): the
Messages API has it on every model, and its input streams as ``input_json_delta`` fragments,
which the codec passes on as the answer's text.
"""

from __future__ import annotations

from typing import Any, Final

from runport.contracts import CompiledInteraction, ErrorCode, Message, ToolSpec
from runport.core import is_text_schema
from runport.ports import PortError

ANSWER_TOOL: Final = "runport_answer"
"""The forced tool a structured answer is given through; a contract may not name a tool so."""

_ANSWER_DESCRIPTION: Final = (
    "Give your final answer by calling this tool: its input is the answer, "
    "shaped by the input schema."
)


def answer_tool_in_use(interaction: CompiledInteraction) -> bool:
    """Whether this interaction's answer comes as the input of ``ANSWER_TOOL``: a structured
    contract whose schema is an object (a tool's input is one); any other schema is asked
    for in text and checked on the receipt."""
    schema = interaction.output_schema
    return not is_text_schema(schema) and schema.get("type") == "object"


def request_body(
    interaction: CompiledInteraction, *, model: str, max_tokens: int, stream: bool
) -> dict[str, Any]:
    policy = interaction.runtime_policy
    body: dict[str, Any] = {"model": model, "max_tokens": policy.get("max_tokens", max_tokens)}
    system = [m.content for m in interaction.messages if m.role in ("system", "developer")]
    if system:
        body["system"] = "\n\n".join(system)
    body["messages"] = _messages(interaction.messages)
    tools = [_tool(tool) for tool in interaction.tools or ()]
    if answer_tool_in_use(interaction):
        if any(tool["name"] == ANSWER_TOOL for tool in tools):
            raise PortError(
                ErrorCode.DATA_INVALID,
                f"a contract tool may not be named {ANSWER_TOOL!r}: the adapter gives "
                "structured answers through a tool of that name",
            )
        tools.append(
            {
                "name": ANSWER_TOOL,
                "description": _ANSWER_DESCRIPTION,
                "input_schema": interaction.output_schema,
            }
        )
        # Extended thinking accepts only an automatic tool choice.
        if "thinking" in policy:
            body["tool_choice"] = {"type": "auto"}
        elif len(tools) == 1:
            body["tool_choice"] = {"type": "tool", "name": ANSWER_TOOL}
        else:
            body["tool_choice"] = {"type": "any"}
    if tools:
        body["tools"] = tools
    for key in ("temperature", "top_p", "top_k", "thinking"):
        if key in policy:
            body[key] = policy[key]
    if "stop" in policy:
        stop = policy["stop"]
        body["stop_sequences"] = [stop] if isinstance(stop, str) else stop
    if stream:
        body["stream"] = True
    return body


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Conversation turns; system turns went to ``system``. Tool results are ``tool_result``
    blocks in a user turn, and consecutive turns of one role are one turn (the API wants every
    result of an assistant turn in the user turn right after it)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role in ("system", "developer"):
            continue
        if message.role == "tool":
            role = "user"
            blocks: list[dict[str, Any]] = [
                {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id or "",
                    "content": message.content,
                }
            ]
        else:
            role = message.role
            blocks = [{"type": "text", "text": message.content}] if message.content else []
            for call in message.tool_calls or ():
                arguments = call.arguments if isinstance(call.arguments, dict) else {}
                blocks.append(
                    {"type": "tool_use", "id": call.call_id, "name": call.name, "input": arguments}
                )
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def _tool(tool: ToolSpec) -> dict[str, Any]:
    wire: dict[str, Any] = {"name": tool.name}
    if tool.description:
        wire["description"] = tool.description
    wire["input_schema"] = tool.parameters
    return wire
