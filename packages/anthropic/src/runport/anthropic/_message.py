"""One Messages API answer — its content blocks, stop reason and usage — assembled into a
``TurnBuilder``, block by block, whether the blocks arrive as stream events or whole in one
JSON body (docs/streaming-law.md, law 2)."""

from __future__ import annotations

import json
from typing import Any, Final

from pydantic import JsonValue

from runport.anthropic._answer import SpaceStripper
from runport.anthropic._errors import invalid
from runport.anthropic._request import ANSWER_TOOL, PROVIDER
from runport.contracts import Finish
from runport.core import TurnBuilder

FINISHES: Final[dict[str, Finish]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "pause_turn": "pause",
    "refusal": "content_filter",
}
"""Messages ``stop_reason`` words normalised (``ExecutionReceipt.finish``); any other is
``other``."""

_TEXT = -1
_ANSWER = -2
_IGNORED = -3
_THINKING = -4


class _Block:
    __slots__ = ("fragments", "initial", "kind", "stripper")

    def __init__(self, kind: int, initial: Any = None) -> None:
        self.kind = kind  # a call's index in the turn, or one of the negative kinds
        self.initial = initial  # a tool's input; a thinking block's place among the turn's
        self.fragments = 0
        self.stripper = SpaceStripper() if kind == _ANSWER else None


class MessageAssembly:
    """Content blocks by their index. Only ``tool_use`` blocks are tool calls; a server-side
    tool (``server_tool_use``, ``mcp_tool_use``) ran at the provider and is not. With a
    structured contract the forced answer tool's input *is* the answer: its fragments are text,
    without the whitespace outside strings, so a streamed and a whole answer read the same
    (ADR 0025).

    Thinking is reasoning, never the answer: a ``thinking`` block is one reasoning block
    (``thinking_delta`` pieces are its ``ReasoningDelta``s, ``signature_delta`` its signature,
    kept as ``{"anthropic": {"type": "thinking", "signature": …}}``), a ``redacted_thinking``
    block one with empty text whose ``data`` is kept (``{"anthropic": {"type":
    "redacted_thinking", "data": …}}``) — what the API wants back, unmodified, in a later turn.

    Usage: ``message_delta``'s counts are cumulative and override ``message_start``'s;
    ``input_tokens`` is taken as reported (cache tokens are not added). The API reports no
    separate count of thinking tokens (they are in ``output_tokens``).
    """

    __slots__ = ("_answer_tool", "_blocks", "_input", "_output", "_thoughts", "turn")

    def __init__(self, turn: TurnBuilder, *, answer_tool: bool) -> None:
        self.turn = turn
        self._answer_tool = answer_tool
        self._blocks: dict[int, _Block] = {}
        self._input: int | None = None
        self._output: int | None = None
        self._thoughts = 0  # reasoning blocks opened so far

    def start(self, index: Any, block: Any) -> None:
        if type(index) is not int or type(block) is not dict:
            raise invalid("a content block has no index or is not an object")
        if index in self._blocks:
            raise invalid(f"content block {index} started twice")
        kind = block.get("type")
        if kind == "text":
            self._blocks[index] = _Block(_TEXT)
            self.turn.text(_text(block.get("text")))
        elif kind == "tool_use":
            name = block.get("name")
            call_id = block.get("id")
            if type(name) is not str or (call_id is not None and type(call_id) is not str):
                raise invalid(f"content block {index}: a tool_use block without a name")
            initial = block.get("input")
            if self._answer_tool and name == ANSWER_TOOL:
                self._blocks[index] = _Block(_ANSWER, initial)
            else:
                self._blocks[index] = _Block(self.turn.open_call(name, call_id), initial)
        elif kind == "thinking":
            self._blocks[index] = _Block(_THINKING, self._thoughts)
            self._thoughts += 1
            self.turn.open_reasoning({PROVIDER: {"type": "thinking"}})
            thinking = block.get("thinking")
            if thinking is not None:
                if type(thinking) is not str:
                    raise invalid(f"content block {index}: a thinking block's text is no string")
                self.turn.reasoning(thinking)
            self._signature(index, block.get("signature"))
        elif kind == "redacted_thinking":
            data = block.get("data")
            if type(data) is not str or not data:
                raise invalid(f"content block {index}: a redacted_thinking block has no data")
            self._blocks[index] = _Block(_IGNORED)
            self._thoughts += 1
            redacted: dict[str, JsonValue] = {"type": "redacted_thinking", "data": data}
            self.turn.whole_reasoning("", {PROVIDER: redacted})
        else:
            self._blocks[index] = _Block(_IGNORED)

    def _signature(self, index: int, signature: Any) -> None:
        """A thinking block's signature (the last one given stands, as in the SDK)."""
        if signature is None or signature == "":
            return
        if type(signature) is not str:
            raise invalid(f"content block {index}: a thinking block's signature is no string")
        self.turn.reasoning_metadata({PROVIDER: {"type": "thinking", "signature": signature}})

    def _current_thought(self, index: int, block: _Block) -> None:
        """Reasoning pieces go to the turn's latest block: a thinking block's deltas must come
        before the next reasoning block opens (the API streams one block at a time)."""
        if block.initial != self._thoughts - 1:
            raise invalid(f"content block {index}: thinking arrived after a later block began")

    def delta(self, index: Any, delta: Any) -> None:
        # The hot path: one call per streamed fragment, so the checks are inlined.
        block = self._blocks.get(index) if type(index) is int else None
        if block is None:
            raise invalid("a delta for a content block that never started")
        if type(delta) is not dict:
            raise invalid("a content block delta is not an object")
        kind = delta.get("type")
        if kind == "text_delta":
            if block.kind == _TEXT:
                text = delta.get("text")
                if type(text) is str:
                    if text:
                        self.turn.text(text)
                elif text is not None:
                    raise invalid("a text_delta's text is not a string")
        elif kind == "input_json_delta" and (block.kind >= 0 or block.kind == _ANSWER):
            fragment = delta.get("partial_json")
            if type(fragment) is str:
                if fragment:
                    block.fragments += 1
                    if block.stripper is not None:
                        self.turn.text(block.stripper.strip(fragment))
                    else:
                        self.turn.call_arguments(block.kind, fragment)
            elif fragment is not None:
                raise invalid("an input_json_delta's partial_json is not a string")
        elif kind == "thinking_delta":
            if block.kind == _THINKING:
                piece = delta.get("thinking")
                if type(piece) is str:
                    if piece:
                        self._current_thought(index, block)
                        self.turn.reasoning(piece)
                elif piece is not None:
                    raise invalid("a thinking_delta's thinking is not a string")
        elif kind == "signature_delta" and block.kind == _THINKING:
            self._current_thought(index, block)
            self._signature(index, delta.get("signature"))

    def stop(self, index: Any) -> None:
        block = self._blocks.get(index) if type(index) is int else None
        if block is None:
            raise invalid("a content block stopped that never started")
        if block.kind < _ANSWER or block.kind == _TEXT or block.fragments:
            if block.kind >= 0:
                self.turn.close_call(block.kind)
            return
        initial = block.initial
        whole = "{}"
        if type(initial) is dict and initial:
            whole = json.dumps(initial, ensure_ascii=False, separators=(",", ":"))
        block.fragments += 1
        self._arguments(block, whole)
        if block.kind >= 0:
            self.turn.close_call(block.kind)

    def _arguments(self, block: _Block, fragment: str) -> None:
        if block.kind == _ANSWER:
            self.turn.text(fragment)
        else:
            self.turn.call_arguments(block.kind, fragment)

    def answers(self, index: int) -> bool:
        """Whether block ``index`` is the forced answer tool's."""
        block = self._blocks.get(index)
        return block is not None and block.kind == _ANSWER

    def stop_reason(self, reason: Any) -> None:
        if reason is not None:
            if type(reason) is not str:
                raise invalid("a stop_reason is not a string")
            self.turn.finished(reason, FINISHES)

    def usage(self, usage: Any) -> None:
        if usage is None:
            return
        if type(usage) is not dict:
            raise invalid("usage is not an object")
        for key in ("input_tokens", "output_tokens"):
            count = usage.get(key)
            if count is None:
                continue
            if type(count) is not int or count < 0:
                raise invalid("usage does not hold token counts")
            if key == "input_tokens":
                self._input = count
            else:
                self._output = count
        if self._input is not None or self._output is not None:
            self.turn.usage = (self._input or 0, self._output or 0)

    def close(self) -> None:
        """``message_stop``: every block that never said ``content_block_stop`` ends here."""
        for index in list(self._blocks):
            self.stop(index)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if type(value) is not str:
        raise invalid("a text field is not a string")
    return value
