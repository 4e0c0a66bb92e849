"""What every frontend protocol's chat shares: the contract's chat input, and the
conversation so far rebuilt as the run's history — each earlier user message rendered through
the contract as the model saw it, each tool call's id seen once and answered once (adr/0036).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue

from runport.contracts import ErrorCode, Message, canonical_json
from runport.core import Contract, ContractError, compile_contract
from runport.server._errors import RequestRefused
from runport.server._frontends._files import CHAT_EXTENSION, FileInputs, SentFile
from runport.server._frontends._reading import bad

DEFAULT_MAX_CHAT_MESSAGES = 200
"""The most messages one chat request may carry (docs/limits.md)."""


def tool_content(value: JsonValue) -> str:
    """A tool's result as a message's text, the way a run sends it to the model: a string
    as it is, anything else as compact sorted JSON."""
    return value if isinstance(value, str) else canonical_json(value).decode()


def chat_input(contract: Contract) -> str:
    """The input a contract's chat messages are bound to: the one its ``runport.chat``
    extension names, else its only required string input; a contract with neither cannot
    be chatted with (a 400 that says how to name one)."""
    extension = contract.extensions.get(CHAT_EXTENSION)
    if isinstance(extension, dict) and isinstance(extension.get("input"), str):
        name = extension["input"]
        if name in contract.inputs:
            return name
    strings = [
        name
        for name, spec in contract.inputs.items()
        if spec.required and spec.json_schema.get("type") == "string"
    ]
    if len(strings) == 1:
        return strings[0]
    raise RequestRefused(
        400,
        ErrorCode.CONTRACT_INVALID,
        f"contract {contract.id!r} names no chat input: give it one required string input, "
        f"or name the input in its extensions ({CHAT_EXTENSION}: {{input: NAME}})",
    )


class History:
    """The conversation so far, rebuilt message by message (a protocol reads its own
    assistant turns into ``messages``)."""

    def __init__(
        self,
        contract: Contract,
        chat_name: str,
        inputs: dict[str, Any],
        context: dict[str, Any] | None,
        files: FileInputs | None = None,
    ) -> None:
        self._contract = contract
        self.files = files if files is not None else FileInputs(contract, inputs, "inputs")
        self._chat_name = chat_name
        self._inputs = inputs
        self._context = context
        self.messages: list[Message] = []
        self._call_ids: set[str] = set()
        self._answered: set[str] = set()
        self._asked: dict[str, Any] = {chat_name: ""}

    @classmethod
    def begin(
        cls,
        contract: Contract,
        inputs: dict[str, Any],
        context: dict[str, Any] | None,
        *,
        inputs_field: str,
        count: int,
        max_messages: int,
        what: str,
    ) -> History:
        """A conversation of ``count`` messages (at most ``max_messages``, or a 413) whose
        last user message gives the contract's chat input, and which may not give that
        input, or the inputs its files fill, in ``inputs`` too."""
        if count > max_messages:
            raise RequestRefused(
                413,
                ErrorCode.REQUEST_TOO_LARGE,
                f"the {what} carries {count} messages; this server takes at most {max_messages}",
            )
        name = chat_input(contract)
        if name in inputs:
            raise bad(
                f"{inputs_field!r} must not give {name!r}: "
                f"the {what}'s last user message is that input"
            )
        files = FileInputs(contract, inputs, inputs_field)
        return cls(contract, name, dict(inputs), context, files)

    def claim_call(self, call_id: str, where: str) -> None:
        """A tool call's id, seen once in the whole conversation."""
        if not call_id:
            raise bad(f"{where}: a tool call needs a non-empty id")
        if call_id in self._call_ids:
            raise bad(f"{where}: tool call {call_id!r} appears twice in the conversation")
        self._call_ids.add(call_id)

    def answers(self, call_id: str) -> bool:
        """Whether a result for ``call_id`` answers a call made before it (once)."""
        if call_id not in self._call_ids or call_id in self._answered:
            return False
        self._answered.add(call_id)
        return True

    def user_message(self, text: str, files: Sequence[SentFile], where: str, *, last: bool) -> None:
        """A user message: an earlier one joins the conversation (``user``); the last is what
        the run answers, its text the chat input and its files the inputs they bind to."""
        if last:
            self._asked = {self._chat_name: text, **self.files.bind(files, where)}
        else:
            self.user(text, where, files)

    def run_inputs(self) -> dict[str, Any]:
        """The run's inputs: the request's, with what the last user message gives."""
        return {**self._inputs, **self._asked}

    def user(self, text: str, where: str, files: Sequence[SentFile] = ()) -> None:
        """An earlier user message as the model saw it: rendered through the contract, its
        text as the chat input and its files in the part inputs they bind to."""
        bound = self.files.bind(files, where)
        try:
            interaction = compile_contract(
                self._contract,
                inputs={**self._inputs, self._chat_name: text, **bound},
                context=self._context,
            )
        except ContractError as error:
            problems = "; ".join(diagnostic.message for diagnostic in error.diagnostics)
            raise bad(
                f"{where}: the contract does not take it as its chat input: {problems}"
            ) from None
        rendered = interaction.messages
        start = 0
        while start < len(rendered) and rendered[start].role in ("system", "developer"):
            start += 1
        self.messages.extend(rendered[start:])
