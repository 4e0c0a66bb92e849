from __future__ import annotations

from collections.abc import Sequence

from runport.contracts import Message


def place_history(messages: list[Message], history: Sequence[Message]) -> list[Message]:
    """History goes after the contract's leading system/developer messages."""
    lead = 0
    while lead < len(messages) and messages[lead].role in ("system", "developer"):
        lead += 1
    return [*messages[:lead], *history, *messages[lead:]]


INTERRUPTED = "interrupted before execution; no result was produced"


def repair_history(history: Sequence[Message]) -> tuple[list[Message], list[str]]:
    """Make a stored conversation one a model API accepts, saying what was changed.

    Every assistant tool call needs a result before the conversation goes on: one without gets
    a neutral synthesized result right after the results that do exist. A tool result whose
    call is not pending is dropped. Nothing is repaired silently: each change is a warning.
    """
    repaired: list[Message] = []
    warnings: list[str] = []
    pending: dict[str, str] = {}

    def close_pending() -> None:
        for call_id, name in pending.items():
            repaired.append(Message(role="tool", content=INTERRUPTED, tool_call_id=call_id))
            warnings.append(
                f"history: tool call {call_id!r} ({name}) had no result; a neutral one was added"
            )
        pending.clear()

    for message in history:
        if message.role == "tool":
            if message.tool_call_id in pending:
                del pending[message.tool_call_id]
                repaired.append(message)
            else:
                warnings.append(
                    f"history: a tool result for {message.tool_call_id!r} answers no pending "
                    "call and was dropped"
                )
            continue
        close_pending()
        repaired.append(message)
        if message.role == "assistant" and message.tool_calls:
            pending = {call.call_id: call.name for call in message.tool_calls}
    close_pending()
    return repaired, warnings
