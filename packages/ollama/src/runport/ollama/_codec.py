"""Ollama's native ``/api/chat`` as a sans-IO codec (docs/codecs.md): a chat body one way;
newline-delimited JSON chunks, or one JSON body, the other."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pydantic_core import to_json

from runport.contracts import (
    AdapterDescriptor,
    ErrorCode,
    ExecutionRequest,
    Finish,
    StreamEvent,
)
from runport.http import (
    Codec,
    HTTPRequest,
    JSONTurnDecoder,
    ResponseDecoder,
    TurnDecoder,
    bearer_headers,
    encode_json,
    error_from_words,
    json_object,
    provider_descriptor,
    provider_text,
)
from runport.ollama._request import request_body
from runport.ports import PortError

DESCRIPTOR: Final = provider_descriptor("ollama", provider="ollama", distribution="runport-ollama")

NDJSON: Final = "application/x-ndjson"

FINISHES: Final[dict[str, Finish]] = {"stop": "stop", "length": "length"}
"""Ollama's ``done_reason`` words normalised (``ExecutionReceipt.finish``); ``stop`` with tool
calls is ``tool_calls``; any other word (``load``, ``unload``) is ``other``."""


def invalid(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)


class ChatCodec(Codec):
    """``POST /api/chat``: ``"stream": true`` answered in ``application/x-ndjson``, ``false``
    in one JSON object. An API key (Ollama's cloud) goes as ``Authorization: Bearer``; a local
    server needs none."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None,
        options: Mapping[str, Any] | None = None,
        keep_alive: str | int | None = None,
    ) -> None:
        self.model = model
        self.options = dict(options or {})
        self.keep_alive = keep_alive
        self._descriptor = DESCRIPTOR.model_copy(update={"model": model})
        self.secrets = (api_key,) if api_key else ()
        self._stream_headers, self._json_headers = bearer_headers(
            f"runport-ollama/{DESCRIPTOR.version}", api_key, events=NDJSON
        )

    def descriptor(self) -> AdapterDescriptor:
        return self._descriptor

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = request_body(
            request.interaction,
            model=self.model,
            stream=stream,
            options=self.options,
            keep_alive=self.keep_alive,
        )
        headers = self._stream_headers if stream else self._json_headers
        return HTTPRequest("POST", "api/chat", encode_json(body), headers)

    def decoder(
        self, request: ExecutionRequest, *, stream: bool, media_type: str
    ) -> ResponseDecoder:
        lines = media_type == NDJSON or (stream and media_type != "application/json")
        chosen = _Lines if lines else _Response
        return chosen(request, self._descriptor, self.secrets)

    def error_text(self, body: Any) -> Any:
        """Ollama's error body: ``{"error": "…"}``."""
        return body.get("error") if type(body) is dict else None


class _Chunk(TurnDecoder):
    """One chat chunk's meaning, the same streamed and unstreamed."""

    marker = 'a chunk with "done": true'

    def chunk(self, data: dict[str, Any]) -> None:
        error = data.get("error")
        if error is not None:
            text = provider_text(error, self.secrets)
            failed = error_from_words([text or ""], None, text)
            if failed.code == ErrorCode.RUNTIME_PERMANENT:
                # a failure after the answer began is the server's (a runner that stopped)
                failed = PortError(ErrorCode.RUNTIME_UNAVAILABLE, failed.message)
            raise failed
        message = data.get("message")
        if message is not None:
            if type(message) is not dict:
                raise invalid("a chunk's message is not an object")
            self.message(message)
        if data.get("done") is True:
            self.done(data)

    def message(self, message: dict[str, Any]) -> None:
        turn = self.turn
        thinking = message.get("thinking")
        if thinking:
            if type(thinking) is not str:
                raise invalid("a message's thinking is not a string")
            turn.reasoning(thinking)
        content = message.get("content")
        if content:
            if type(content) is not str:
                raise invalid("a message's content is not a string")
            turn.text(content)
        calls = message.get("tool_calls")
        if calls:
            if type(calls) is not list:
                raise invalid("a message's tool_calls is not a list")
            for call in calls:
                self.call(call)

    def call(self, call: Any) -> None:
        """A call arrives whole: its name and its arguments, an object (a string of JSON from
        some servers is taken as it is)."""
        function = call.get("function") if type(call) is dict else None
        if type(function) is not dict or type(function.get("name")) is not str:
            raise invalid("a tool call has no function name")
        arguments = function.get("arguments", {})
        call_id = call.get("id")
        call_id = call_id if type(call_id) is str else None
        if type(arguments) is dict:
            # the object is the receipt's as it is; its text is the fragment
            self.turn.whole_call(function["name"], call_id, _text(arguments), parsed=arguments)
        elif type(arguments) is str:
            self.turn.whole_call(function["name"], call_id, arguments)
        else:
            raise invalid("a tool call's arguments are not an object")

    def done(self, data: dict[str, Any]) -> None:
        turn = self.turn
        reason = data.get("done_reason")
        if reason is not None:
            if type(reason) is not str:
                raise invalid("done_reason is not a string")
            turn.finished(reason, FINISHES)
            if turn.finish == "stop" and turn.has_call(0):
                turn.finish = "tool_calls"  # stop is also the word for a turn that made calls
        given, output = data.get("prompt_eval_count"), data.get("eval_count")
        if given is not None or output is not None:
            # prompt_eval_count is left out when the whole prompt came from the cache
            given, output = given or 0, output or 0
            if not (type(given) is int and type(output) is int and given >= 0 and output >= 0):
                raise invalid("prompt_eval_count and eval_count are not token counts")
            turn.usage = (given, output)
        self.complete = True


def _text(arguments: dict[str, Any]) -> str:
    """An arguments object as JSON text: pydantic-core's encoder (the line was parsed by its
    decoder), several times faster than ``json``'s on a small object. A line may carry
    ``NaN`` or an infinity, which JSON cannot: such arguments are an invalid response."""
    text = to_json(arguments).decode()
    if ("NaN" in text or "Infinity" in text) and _not_finite(arguments):
        raise invalid("a tool call's arguments hold a number JSON cannot carry (NaN or infinity)")
    return text


def _not_finite(value: object) -> bool:
    if type(value) is float:
        return not math.isfinite(value)
    if type(value) is dict:
        return any(_not_finite(item) for item in value.values())
    if type(value) is list:
        return any(_not_finite(item) for item in value)
    return False


class _Lines(_Chunk):
    """The stream: one JSON object a line; the chunk with ``"done": true`` completes the turn,
    and nothing after it is read. A line the body ends on without its newline is read as
    one; a line cut short there is not JSON, an invalid response."""

    def begin(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> Iterator[StreamEvent]:
        if self._pending:
            data = self._pending + data
        *lines, self._pending = data.split(b"\n")
        turn = self.turn
        for line in lines:
            if not line or line.isspace():
                continue
            chunk = json_object(line, "a stream line")
            message = chunk.get("message")
            if chunk.get("done") is False and type(message) is dict and "error" not in chunk:
                # the usual line: one piece of the answer or of the thinking, nothing else
                content = message.get("content")
                thinking = message.get("thinking")
                calls = message.get("tool_calls")
                if not calls and type(content) is str:
                    if content and not thinking:
                        yield turn.text_event(content)
                        continue
                    if not content and type(thinking) is str and thinking:
                        yield turn.reasoning_event(thinking)
                        continue
                elif type(calls) is list and not content and not thinking:
                    # a line of whole calls and nothing else
                    events = turn.events
                    try:
                        for call in calls:
                            self.call(call)
                    finally:
                        yield from events  # a call's failure after those before it
                        events.clear()
                    continue
            yield from self.completed(self.chunk, chunk)
            if self.complete:
                self.finished = True
                return

    def _line(self, line: bytes) -> None:
        self.chunk(json_object(line, "a stream line"))

    def end(self) -> Iterator[StreamEvent]:
        line, self._pending = self._pending, b""
        if line and not line.isspace() and not self.complete:
            yield from self.completed(self._line, line)


class _Response(_Chunk, JSONTurnDecoder):
    def body(self, data: bytes) -> bool:
        answer = json_object(data, "the response")
        if type(answer.get("message")) is not dict and "error" not in answer:
            raise invalid("the response has no message object")
        self.chunk(answer)
        return self.complete
