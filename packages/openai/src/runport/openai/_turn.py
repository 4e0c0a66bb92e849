"""The chat-completions answer, streamed or whole, assembled into one turn.

A JSON completion is fed through the same ``TurnAssembler`` as the chunks of a stream, which is
what makes ``execute`` and ``execute_streaming`` agree (docs/streaming-law.md, law 2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runport.contracts import (
    AdapterDescriptor,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from runport.http import TextPieces, parsed_tool_call, turn_receipt
from runport.openai._errors import error_frame, invalid

Emit = Callable[[StreamEvent], None]


class _Call:
    """One tool call being assembled.

    A call is announced (its first ``ToolCallDelta``) as soon as its name is known; argument
    text that came before the name is held and sent with the announcement.
    """

    __slots__ = ("call_id", "fragments", "index", "name", "upstream_id")

    def __init__(self, index: int) -> None:
        self.index = index
        self.name: str | None = None
        self.upstream_id: str | None = None
        self.call_id = f"call_{index}"
        self.fragments = TextPieces()


class TurnAssembler:
    """Assembles one turn from chat-completion chunks (or one whole completion), emitting each
    progress event as the piece that completes it is fed.

    Upstream quirks it accepts: a role-only first chunk, chunks with empty or absent
    ``choices`` (usage, content-filter results), tool-call ``id``/``name`` on the first fragment
    only or repeated on every one, calls interleaved by ``index`` in any order, a ``refusal``
    in place of content (kept as the turn's text: nothing the model said is lost). What it
    refuses (``INVALID_RESPONSE``): a call whose name or id changes, an index that is not a
    non-negative integer, fields of the wrong JSON type.

    ``delta.content`` may be a string or a list of typed parts (Mistral's reasoning models):
    ``text`` parts are the answer, every other part (``thinking``, …) is not, and is dropped.

    After ``finish_reason`` the protocol allows only what is not the answer: the usage chunk,
    empty deltas, filter results. A second ``finish_reason`` is ignored (the first stands);
    text, a refusal or tool-call fragments after it are ``INVALID_RESPONSE``, since the
    answer was already declared whole.
    """

    __slots__ = ("_calls", "_secrets", "_text", "emit", "finish_reason", "usage")

    def __init__(self, emit: Emit, secrets: tuple[str, ...] = ()) -> None:
        self.emit = emit
        self._secrets = secrets
        self._text = TextPieces()
        self._calls: dict[int, _Call] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def feed_chunk(self, chunk: Any) -> None:
        """One ``chat.completion.chunk`` (already JSON-decoded)."""
        if type(chunk) is not dict:
            raise invalid("a stream frame is not a JSON object")
        if chunk.get("error") is not None:
            raise error_frame(chunk["error"], self._secrets)
        choices = chunk.get("choices")
        if choices:
            if type(choices) is not list:
                raise invalid("a stream frame's choices is not a list")
            for choice in choices:
                if type(choice) is not dict:
                    raise invalid("a stream frame's choice is not an object")
                if choice.get("index", 0) != 0:
                    continue  # this adapter never asks for n > 1
                delta = choice.get("delta")
                if delta:
                    if type(delta) is not dict:
                        raise invalid("a stream frame's delta is not an object")
                    self._feed_message(delta)
                finish = choice.get("finish_reason")
                if finish is not None:
                    self._finish(finish)
        usage = chunk.get("usage")
        if usage is not None:
            self._usage(usage)

    def single_event(self, chunk: Any) -> StreamEvent | None:
        """The one event of a chunk in a shape nearly every frame of a long stream has — one
        choice whose delta is only a piece of text, or only a fragment of a call's arguments
        already announced — assembled like ``feed_chunk`` would; ``None`` for any other chunk,
        which ``feed_chunk`` then takes (untouched by this call).

        Returned rather than emitted, so a decoder hands it on with no callback and no list
        between (the per-delta cost of the streaming benchmark)."""
        if type(chunk) is not dict or self.finish_reason is not None:
            return None
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        if chunk.get("usage") is not None or chunk.get("error") is not None:
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None:
            return None
        delta = choice.get("delta")
        if type(delta) is not dict or len(delta) != 1 or choice.get("index", 0) != 0:
            return None
        content = delta.get("content")
        if content:
            if type(content) is not str:
                return None
            text = Delta(text=content)
            self._text.add(content)
            return text
        calls = delta.get("tool_calls")
        if type(calls) is not list or len(calls) != 1:
            return None
        fragment = calls[0]
        if type(fragment) is not dict or len(fragment) != 2:
            return None
        function = fragment.get("function")
        index = fragment.get("index")
        if type(function) is not dict or len(function) != 1 or type(index) is not int:
            return None
        arguments = function.get("arguments")
        call = self._calls.get(index)
        if call is None or call.name is None or type(arguments) is not str or not arguments:
            return None
        event = ToolCallDelta(
            index=index, call_id=call.call_id, name=call.name, arguments_fragment=arguments
        )
        call.fragments.add(arguments)
        return event

    def feed_completion(self, completion: Any) -> None:
        """A whole ``chat.completion`` (the non-streamed answer), fed as one big chunk."""
        if type(completion) is not dict:
            raise invalid("the response is not a JSON object")
        if completion.get("error") is not None:
            raise error_frame(completion["error"], self._secrets)
        choices = completion.get("choices")
        if type(choices) is not list or not choices:
            raise invalid("the response has no choices")
        choice = next(
            (c for c in choices if type(c) is dict and c.get("index", 0) == 0), choices[0]
        )
        if type(choice) is not dict:
            raise invalid("the response's choice is not an object")
        message = choice.get("message")
        if message is not None:
            if type(message) is not dict:
                raise invalid("the response's message is not an object")
            calls = message.get("tool_calls")
            if calls:
                if type(calls) is not list:
                    raise invalid("the response's tool_calls is not a list")
                # A whole completion lists its calls in order without an index: the position is.
                message = {
                    **message,
                    "tool_calls": [
                        {**call, "index": position} if type(call) is dict else call
                        for position, call in enumerate(calls)
                    ],
                }
            self._feed_message(message)
        finish = choice.get("finish_reason")
        if finish is not None:
            self._finish(finish)
        usage = completion.get("usage")
        if usage is not None:
            self._usage(usage)

    def _feed_message(self, delta: dict[str, Any]) -> None:
        content = delta.get("content")
        if content:
            if type(content) is list:
                content = _text_parts(content)
            elif type(content) is not str:
                raise invalid("a content field is neither a string nor a list of parts")
            if content:
                self._text_piece(content)
        refusal = delta.get("refusal")
        if refusal:
            if type(refusal) is not str:
                raise invalid("a refusal field is not a string")
            self._text_piece(refusal)
        calls = delta.get("tool_calls")
        if calls:
            if type(calls) is not list:
                raise invalid("a tool_calls field is not a list")
            if self.finish_reason is not None:
                raise invalid("tool-call fragments arrived after finish_reason")
            for fragment in calls:
                self._feed_call(fragment)

    def _text_piece(self, text: str) -> None:
        if self.finish_reason is not None:
            raise invalid("text arrived after finish_reason")
        self.emit(Delta(text=text))
        self._text.add(text)

    def _feed_call(self, fragment: Any) -> None:
        if type(fragment) is not dict:
            raise invalid("a tool-call fragment is not an object")
        index = fragment.get("index")
        if type(index) is not int or index < 0:
            raise invalid("a tool-call fragment has no valid index")
        function = fragment.get("function") or {}
        if type(function) is not dict:
            raise invalid(f"tool call {index}: function is not an object")
        name = _optional_text(function.get("name"), index, "name")
        upstream_id = _optional_text(fragment.get("id"), index, "id")
        arguments = _optional_text(function.get("arguments"), index, "arguments")
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _Call(index)
        if call.name is None:
            if upstream_id:
                call.upstream_id = call.call_id = upstream_id
            if arguments:
                call.fragments.add(arguments)
            if name:
                call.name = name
                self.emit(
                    ToolCallDelta(
                        index=index,
                        call_id=call.call_id,
                        name=name,
                        arguments_fragment=call.fragments.held(),
                    )
                )
            return
        if name and name != call.name:
            raise invalid(f"tool call {index} changed its name mid-stream")
        # An id first seen after the call was announced is ignored: the announced call_id
        # stands, since a call's identity never changes once a caller has seen it.
        if call.upstream_id is not None and upstream_id and upstream_id != call.upstream_id:
            raise invalid(f"tool call {index} changed its id mid-stream")
        if arguments:
            self.emit(
                ToolCallDelta(
                    index=index, call_id=call.call_id, name=call.name, arguments_fragment=arguments
                )
            )
            call.fragments.add(arguments)

    def _finish(self, finish: Any) -> None:
        if type(finish) is not str:
            raise invalid("a finish_reason is not a string")
        if self.finish_reason is None:
            self.finish_reason = finish

    def _usage(self, usage: Any) -> None:
        if type(usage) is not dict:
            raise invalid("usage is not an object")
        counts = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if counts == (None, None):
            return  # a usage object without counts reports nothing: none is invented
        for count in counts:
            if count is not None and (type(count) is not int or count < 0):
                raise invalid("usage does not hold token counts")
        self.usage = Usage(input_tokens=counts[0] or 0, output_tokens=counts[1] or 0)

    def receipt(self, request: ExecutionRequest, adapter: AdapterDescriptor) -> ExecutionReceipt:
        """The turn's receipt. The joined text replaces the fragments, so the turn's text is
        held once, not twice, while the receipt is built."""
        calls: list[ToolCall] = []
        for index, call in sorted(self._calls.items()):
            if call.name is None:
                raise invalid(f"tool call {index} never got a name")
            calls.append(parsed_tool_call(index, call.call_id, call.name, call.fragments.take()))
        return turn_receipt(
            request,
            adapter,
            text=self._text.take(),
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
        )


def _text_parts(parts: list[Any]) -> str:
    """The answer's text in a list of typed content parts; other parts are not the answer."""
    texts: list[str] = []
    for part in parts:
        if type(part) is str:
            texts.append(part)
        elif type(part) is dict and part.get("type") == "text":
            text = part.get("text")
            if type(text) is not str:
                raise invalid("a text content part holds no string")
            texts.append(text)
        elif type(part) is not dict:
            raise invalid("a content part is not an object")
    return "".join(texts)


def _optional_text(value: Any, index: int, field: str) -> str | None:
    if value is None or type(value) is str:
        return value
    raise invalid(f"tool call {index}: {field} is not a string")
