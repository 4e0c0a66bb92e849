"""Cohere's v2 chat API as a sans-IO codec (docs/codecs.md): a chat body one way; its typed
server-sent events, or one JSON body, the other."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from runport.cohere._request import PROVIDER, request_body
from runport.contracts import ErrorCode, ExecutionRequest, Finish, StreamEvent
from runport.http import (
    HTTPRequest,
    JSONAPICodec,
    JSONTurnDecoder,
    SSETurnDecoder,
    TurnDecoder,
    cache_counts,
    error_from_words,
    json_object,
    provider_descriptor,
    provider_text,
)
from runport.ports import PortError

DESCRIPTOR: Final = provider_descriptor(
    "cohere-chat", provider="cohere", distribution="runport-cohere"
)

FINISHES: Final[dict[str, Finish]] = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_calls",
}
"""Cohere's ``finish_reason`` words normalised (``ExecutionReceipt.finish``); any other is
``other`` (``ERROR`` fails the call)."""


def kept_as(kind: str) -> dict[str, Any]:
    """A reasoning part's ``provider_metadata``: Cohere made it, as ``thinking`` or as its
    ``tool_plan`` (each goes back where it came from)."""
    return {PROVIDER: {"type": kind}}


def invalid(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)


class ChatCodec(JSONAPICodec):
    """``POST /v2/chat`` with ``"stream": true`` (typed server-sent events) or ``false`` (one
    JSON body); the key goes as ``Authorization: Bearer``."""

    def __init__(self, *, model: str, api_key: str | None) -> None:
        super().__init__(
            DESCRIPTOR,
            distribution="runport-cohere",
            model=model,
            api_key=api_key,
            credentials={"Authorization": f"Bearer {api_key}" if api_key else None},
            decoders=(_Events.for_codec, _Response.for_codec),
        )

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = request_body(request.interaction, model=self.model, stream=stream)
        return self.post("v2/chat", body, stream=stream)

    def error_text(self, body: Any) -> Any:
        """Cohere's error body: ``{"message": …}`` (``{"id": …, "message": …}``)."""
        return body.get("message") if type(body) is dict else None


class _Assembly(TurnDecoder):
    """What both decoders keep per call: the turn's call index of each of Cohere's."""

    marker = "message-end"

    def begin(self) -> None:
        self._calls: dict[Any, int] = {}
        self._planning = False

    def end_message(self, delta: Any) -> None:
        """``message-end``'s delta, or the unstreamed body: the finish and the usage; an
        ``ERROR`` finish fails the call with the error Cohere gives."""
        if type(delta) is not dict:
            raise invalid("message-end has no delta")
        reason = delta.get("finish_reason")
        if reason == "ERROR":
            text = provider_text(delta.get("error"), self.secrets)
            failed = error_from_words([text or ""], None, text)
            if failed.code == ErrorCode.RUNTIME_PERMANENT:
                failed = PortError(ErrorCode.RUNTIME_UNAVAILABLE, failed.message)
            raise failed
        if type(reason) is not str:
            raise invalid("message-end has no finish_reason")
        self.turn.close_calls()
        self.turn.finished(reason, FINISHES)
        self.usage(delta.get("usage"))

    def usage(self, usage: Any) -> None:
        if usage is None:
            return
        counted = usage.get("tokens") if type(usage) is dict else None
        if counted is None and type(usage) is dict:
            counted = usage.get("billed_units")
        if type(counted) is not dict:
            raise invalid("usage holds no token counts")
        given, output = counted.get("input_tokens"), counted.get("output_tokens")
        if not (type(given) is int and type(output) is int and given >= 0 and output >= 0):
            raise invalid("usage does not hold token counts")
        read, _ = cache_counts(usage.get("cached_tokens"), input_tokens=given)
        self.turn.usage = (given, output)
        self.turn.cache_read_tokens = read

    def content(self, content: Any) -> None:
        """A content piece: ``{"text": …}`` or ``{"thinking": …}``."""
        if type(content) is not dict:
            raise invalid("a content delta holds no content")
        text = content.get("text")
        if type(text) is str:
            self.turn.text(text)
            return
        thinking = content.get("thinking")
        if type(thinking) is not str:
            raise invalid("a content delta holds neither text nor thinking")
        self.turn.reasoning(thinking)

    def plan(self, piece: Any) -> None:
        """A piece of the tool plan: a reasoning part of its own, sent back as ``tool_plan``."""
        if type(piece) is not str:
            raise invalid("a tool plan is not a string")
        if not self._planning:
            self._planning = True
            self.turn.open_reasoning(kept_as("tool_plan"))
        self.turn.reasoning(piece)

    def start_call(self, index: Any, call: Any) -> None:
        function = call.get("function") if type(call) is dict else None
        if type(function) is not dict or type(function.get("name")) is not str:
            raise invalid("a tool call has no function name")
        if index in self._calls:
            raise invalid("a tool call's index is repeated")
        call_id = call.get("id")
        self._calls[index] = self.turn.open_call(
            function["name"], call_id if type(call_id) is str else None
        )
        self._planning = False
        arguments = function.get("arguments")
        if arguments:
            self.call_arguments(index, arguments)

    def call_arguments(self, index: Any, piece: Any) -> None:
        call = self._calls.get(index)
        if call is None or type(piece) is not str:
            raise invalid("a tool call delta belongs to no started call")
        self.turn.call_arguments(call, piece)

    def cite(self, citation: Any) -> None:
        """A citation: the answer's span (``start``, ``end``) and its first source, a
        document named by its title or id. Its ``text`` is the answer's words at that span
        (not a passage of the source), so it is no ``cited_text``: the span says it."""
        if type(citation) is not dict:
            raise invalid("a citation is not an object")
        sources = citation.get("sources")
        first = sources[0] if type(sources) is list and sources else {}
        document = first.get("document") if type(first) is dict else None
        title = document.get("title") if type(document) is dict else None
        if type(title) is not str:
            title = first.get("id") if type(first) is dict else None
        source: dict[str, Any] = {"type": "document"}
        if type(title) is str:
            source["title"] = title
        start, end = citation.get("start"), citation.get("end")
        self.turn.citation(
            source,
            start=start if type(start) is int else None,
            end=end if type(end) is int else None,
        )


def _message(data: dict[str, Any]) -> Any:
    delta = data.get("delta")
    return delta.get("message") if type(delta) is dict else None


class _Events(_Assembly, SSETurnDecoder):
    """Each event's ``type`` says what it carries; ``message-end`` completes the turn."""

    def feed(self, data: bytes) -> Iterator[StreamEvent]:
        turn = self.turn
        for _event, payload in self._sse.feed(data):
            chunk = json_object(payload, "a stream event")
            kind = chunk.get("type")
            if kind == "content-delta" or kind == "tool-call-delta":
                # the usual event: one piece of text, thinking or arguments, nothing else
                message = _message(chunk)
                if kind == "content-delta":
                    content = message.get("content") if type(message) is dict else None
                    if type(content) is dict:
                        text = content.get("text")
                        if type(text) is str and text:
                            yield turn.text_event(text)
                            continue
                        thinking = content.get("thinking")
                        if type(thinking) is str and thinking and text is None:
                            yield turn.reasoning_event(thinking)
                            continue
                else:
                    calls = message.get("tool_calls") if type(message) is dict else None
                    function = calls.get("function") if type(calls) is dict else None
                    piece = function.get("arguments") if type(function) is dict else None
                    call = self._calls.get(chunk.get("index"))
                    if type(piece) is str and piece and call is not None:
                        made = turn.arguments_event(call, piece)
                        if made is not None:
                            yield made
                            continue
            yield from self.completed(self.event, chunk)
            if self.finished:
                return

    def frame(self, event: str, payload: bytes) -> None:
        self.event(json_object(payload, "a stream event"))

    def event(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "content-delta":
            message = _message(data)
            self.content(message.get("content") if type(message) is dict else None)
        elif kind == "tool-call-delta":
            message = _message(data)
            calls = message.get("tool_calls") if type(message) is dict else None
            function = calls.get("function") if type(calls) is dict else None
            piece = function.get("arguments") if type(function) is dict else None
            self.call_arguments(data.get("index"), piece)
        elif kind == "content-start":
            message = _message(data)
            content = message.get("content") if type(message) is dict else None
            if type(content) is dict and content.get("type") == "thinking":
                self.turn.open_reasoning(kept_as("thinking"))
        elif kind == "tool-plan-delta":
            message = _message(data)
            self.plan(message.get("tool_plan") if type(message) is dict else None)
        elif kind == "tool-call-start":
            message = _message(data)
            self.start_call(
                data.get("index"), message.get("tool_calls") if type(message) is dict else None
            )
        elif kind == "tool-call-end":
            call = self._calls.get(data.get("index"))
            if call is not None:
                self.turn.close_call(call)
        elif kind == "citation-start":
            message = _message(data)
            self.cite(message.get("citations") if type(message) is dict else None)
        elif kind == "message-end":
            self.end_message(data.get("delta"))
            self.complete = True
            self.finished = True


class _Response(_Assembly, JSONTurnDecoder):
    def body(self, data: bytes) -> bool:
        answer = json_object(data, "the response")
        message = answer.get("message")
        if type(message) is not dict:
            raise invalid("the response has no message object")
        plan = message.get("tool_plan")
        if plan:
            self.plan(plan)
        for content in message.get("content") or ():
            if type(content) is dict and content.get("type") == "thinking":
                self.turn.open_reasoning(kept_as("thinking"))
            self.content(content)
        for index, call in enumerate(message.get("tool_calls") or ()):
            self.start_call(index, call)
        for citation in message.get("citations") or ():
            self.cite(citation)
        self.end_message(answer)
        return True
