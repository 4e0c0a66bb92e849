"""Amazon Bedrock's Converse API as a sans-IO codec (docs/codecs.md): a Converse body one
way; ConverseStream's eventstream messages, or Converse's one JSON body, the other."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, TypeAlias
from urllib.parse import quote

from runport.bedrock._request import PROVIDER, request_body
from runport.contracts import (
    AdapterDescriptor,
    ErrorCode,
    ExecutionRequest,
    Finish,
)
from runport.http import (
    Codec,
    EventStreamTurnDecoder,
    HTTPRequest,
    JSONTurnDecoder,
    ResponseDecoder,
    TurnDecoder,
    bearer_headers,
    cache_counts,
    encode_json,
    json_object,
    provider_descriptor,
)
from runport.ports import PortError


def bedrock_descriptor(id: str) -> AdapterDescriptor:
    """The descriptor of a codec of Bedrock Runtime, ``id`` naming the wire it speaks."""
    return provider_descriptor(id, provider="aws.bedrock", distribution="runport-bedrock")


DESCRIPTOR: Final = bedrock_descriptor("bedrock-converse")

EVENTSTREAM: Final = "application/vnd.amazon.eventstream"

FINISHES: Final[dict[str, Finish]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "content_filtered": "content_filter",
    "guardrail_intervened": "content_filter",
}
"""Converse ``stopReason`` words normalised (``ExecutionReceipt.finish``); any other is
``other``."""


def invalid(message: str) -> PortError:
    return PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, message)


def model_path(model: str) -> str:
    """``model`` as one path segment: a model id, an inference profile's id, or an ARN whose
    ``:`` and ``/`` are percent-encoded, as Bedrock's URLs require."""
    return quote(model, safe="")


RETRYABLE_STATUSES: Final = frozenset({424})
"""Bedrock's statuses worth another try that a status alone reads as permanent: 424
(``ModelErrorException``, the model failed while answering; Bedrock says to retry)."""


def bedrock_error_code(status: int) -> ErrorCode | None:
    """Bedrock's own reading of a non-2xx status (``Codec.error_code``): 424 is unavailable,
    so retryable, and keeps a ``Retry-After`` hint; any other status keeps its own reading."""
    return ErrorCode.RUNTIME_UNAVAILABLE if status in RETRYABLE_STATUSES else None


BedrockDecoder: TypeAlias = Callable[
    [ExecutionRequest, AdapterDescriptor, tuple[str, ...]], ResponseDecoder
]
"""A decoder class of a Bedrock codec, built per call from the request, the codec's descriptor
and the secrets to keep out of messages."""


class BedrockCodec(Codec):
    """What Bedrock Runtime's operations share: the model id as one path segment, the
    streamed and the unstreamed operation under it (``operations``, in that order), the
    credential (a Bedrock API key as ``Authorization: Bearer``; without one, the request goes
    unsigned to the client, whose ``auth`` — ``SigV4Auth`` — signs it), how the answer is
    read (``decoders``), Bedrock's error bodies and its retryable 424. A codec of one
    operation pair says its ``wire``, ``operations`` and ``decoders`` and writes ``encode``."""

    wire: ClassVar[AdapterDescriptor]
    """The descriptor of the wire the codec speaks (each codec's has ``model`` set)."""
    operations: ClassVar[tuple[str, str]]
    """The streamed and the unstreamed operation under the model's path."""
    decoders: ClassVar[tuple[BedrockDecoder, BedrockDecoder]]
    """The eventstream's decoder and the JSON body's."""

    def __init__(self, *, model: str, api_key: str | None) -> None:
        self.model = model
        self._descriptor = self.wire.model_copy(update={"model": model})
        self.secrets = (api_key,) if api_key else ()
        self._stream_headers, self._json_headers = bearer_headers(
            f"runport-bedrock/{self.wire.version}", api_key, events=EVENTSTREAM
        )
        segment = model_path(model)
        self._paths = (
            f"model/{segment}/{self.operations[0]}",
            f"model/{segment}/{self.operations[1]}",
        )

    def descriptor(self) -> AdapterDescriptor:
        return self._descriptor

    def post(self, body: Any, *, stream: bool) -> HTTPRequest:
        """``body`` posted to the streamed or the unstreamed operation."""
        if stream:
            return HTTPRequest("POST", self._paths[0], encode_json(body), self._stream_headers)
        return HTTPRequest("POST", self._paths[1], encode_json(body), self._json_headers)

    def decoder(
        self, request: ExecutionRequest, *, stream: bool, media_type: str
    ) -> ResponseDecoder:
        """The eventstream's decoder or the JSON body's, as the answer is (an eventstream
        when it says so, or when one was asked for and it does not say it is JSON)."""
        events, whole = self.decoders
        streamed = media_type == EVENTSTREAM or (stream and media_type != "application/json")
        return (events if streamed else whole)(request, self._descriptor, self.secrets)

    def error_text(self, body: Any) -> Any:
        """Bedrock's error body: ``{"message": …}`` (``Message`` from some services)."""
        if type(body) is dict:
            return body.get("message", body.get("Message"))
        return None

    def error_code(self, status: int, body: Any) -> ErrorCode | None:
        return bedrock_error_code(status)


@dataclass
class _ServerBlock:
    """A content block of a tool Bedrock ran itself, while it streams: a ``toolUse`` whose
    ``type`` is ``server_tool_use`` (its input in pieces) or the ``toolResult`` that answers it
    (its content in pieces)."""

    call_id: str
    name: str | None  # None: a result
    metadata: dict[str, Any]
    pieces: list[str] = field(default_factory=list)
    content: list[Any] = field(default_factory=list)
    error: str | None = None


SERVER_TOOL_USE: Final = "server_tool_use"
"""A ``toolUse`` block's ``type`` when Bedrock runs the tool itself (Nova's
``nova_code_interpreter``, ``nova_grounding``); a client call's is ``tool_use`` or absent."""


class _Assembly(TurnDecoder):
    """What both decoders keep per call: the content block each call is in.

    A ``toolUse`` block whose ``type`` is ``server_tool_use`` is a tool Bedrock ran itself:
    a ``ServerToolCall`` (owed when its block stops, its input whole), never a call the run
    makes; the ``toolResult`` block in the answer that follows is its ``ServerToolResult`` (its
    content as sent, a ``status`` other than ``success`` its error); both keep their
    ``type`` (and the result its ``status``) to go back in a later turn
    (adr/0055-what-the-provider-did-itself.md). A ``reasoningContent`` block whose reasoning
    is redacted (``redactedContent``) is a reasoning part with no text whose
    ``provider_metadata`` holds the data, sent back as it came. A block or delta of a kind
    not known is kept (adr/0054-nothing-a-provider-sends-is-dropped.md)."""

    marker = "messageStop"

    def begin(self) -> None:
        self._calls: dict[int, int] = {}  # content block index → the turn's call index
        self._servers: dict[int, _ServerBlock] = {}  # content block index → a server block
        self._thinking: object = None  # the content block of the open reasoning block

    def usage(self, usage: Any) -> None:
        if usage is None:
            return
        if type(usage) is not dict:
            raise invalid("usage is not an object")
        given, output = usage.get("inputTokens"), usage.get("outputTokens")
        if not (type(given) is int and type(output) is int and given >= 0 and output >= 0):
            raise invalid("usage does not hold token counts")
        read, written = cache_counts(
            usage.get("cacheReadInputTokens"), usage.get("cacheWriteInputTokens"), input_tokens=None
        )
        # Converse's inputTokens leaves the cached tokens out: the receipt counts them in.
        self.turn.usage = (given + (read or 0) + (written or 0), output)
        self.turn.cache_read_tokens, self.turn.cache_write_tokens = read, written

    def stop(self, reason: Any) -> None:
        if type(reason) is not str:
            raise invalid("messageStop has no stopReason")
        self.turn.finished(reason, FINISHES)

    def start(self, block: Any, start: Any) -> None:
        if type(start) is dict and "toolResult" in start:
            self._server_block(block, _result_block(start["toolResult"]))
            return
        use = start.get("toolUse") if type(start) is dict else None
        if use is None:
            return
        if type(use) is not dict or type(use.get("name")) is not str:
            raise invalid("a toolUse block has no name")
        call_id = use.get("toolUseId")
        if use.get("type") == SERVER_TOOL_USE:
            if type(call_id) is not str or not call_id:
                raise invalid("a server_tool_use block has no toolUseId")
            server = _ServerBlock(call_id, use["name"], {PROVIDER: {"type": SERVER_TOOL_USE}})
            self._server_block(block, server)
            return
        if block in self._calls or type(block) is not int:
            raise invalid("a toolUse block's contentBlockIndex is missing or repeated")
        self._calls[block] = self.turn.open_call(
            use["name"], call_id if type(call_id) is str else None
        )

    def _server_block(self, block: Any, server: _ServerBlock) -> None:
        if type(block) is not int or block in self._servers or block in self._calls:
            raise invalid("a server tool block's contentBlockIndex is missing or repeated")
        self._servers[block] = server

    def delta(self, block: Any, delta: Any) -> None:
        if type(delta) is not dict:
            raise invalid("a contentBlockDelta has no delta")
        text = delta.get("text")
        if type(text) is str:
            self.turn.text(text)
            return
        use = delta.get("toolUse")
        if use is not None:
            piece = use.get("input") if type(use) is dict else None
            server = self._servers.get(block)
            if server is not None and server.name is not None and type(piece) is str:
                server.pieces.append(piece)
                return
            call = self._calls.get(block)
            if call is None or type(piece) is not str:
                raise invalid("a toolUse delta belongs to no announced call")
            self.turn.call_arguments(call, piece)
            return
        if "toolResult" in delta:
            server = self._servers.get(block)
            content = delta["toolResult"]
            if server is None or server.name is not None or type(content) is not list:
                raise invalid("a toolResult delta belongs to no announced result")
            server.content.extend(content)
            return
        reasoning = delta.get("reasoningContent")
        if type(reasoning) is dict:
            self.reasoning(block, reasoning.get("text"), reasoning.get("signature"))
            redacted = reasoning.get("redactedContent")
            if type(redacted) is str and redacted:
                self.turn.reasoning_metadata({PROVIDER: {"redactedContent": redacted}})
        elif "text" in delta:
            raise invalid("a text delta holds no string")
        else:
            self.turn.unknown(PROVIDER, {"contentBlockIndex": block, "delta": delta})

    def reasoning(self, block: Any, text: Any, signature: Any) -> None:
        if block != self._thinking or block is None:
            self._thinking = block
            self.turn.open_reasoning()
        if type(text) is str:
            self.turn.reasoning(text)
        if type(signature) is str and signature:
            self.turn.reasoning_metadata({PROVIDER: {"signature": signature}})

    def close(self, block: Any) -> None:
        server = self._servers.pop(block, None)
        if server is not None:
            self._server_done(server)
            return
        call = self._calls.get(block)
        if call is not None:
            self.turn.close_call(call)

    def _server_done(self, server: _ServerBlock) -> None:
        if server.name is None:
            self.turn.server_result(
                server.call_id, server.content, error=server.error, metadata=server.metadata
            )
            return
        text = "".join(server.pieces)
        try:
            given: Any = json.loads(text) if text else {}
        except ValueError:
            raise invalid("a server_tool_use block's input is not JSON") from None
        self.turn.server_call(server.call_id, server.name, given, server.metadata)


def _result_block(result: Any) -> _ServerBlock:
    """A ``toolResult`` block in the answer: what a server tool gave (its content, streamed
    or whole, is added by the caller)."""
    if type(result) is not dict or type(result.get("toolUseId")) is not str:
        raise invalid("a toolResult block has no toolUseId")
    status = result.get("status")
    kind = result.get("type")
    metadata: dict[str, Any] = {}
    if type(kind) is str:
        metadata["type"] = kind
    if type(status) is str:
        metadata["status"] = status
    error = status if type(status) is str and status != "success" else None
    return _ServerBlock(result["toolUseId"], None, {PROVIDER: metadata}, error=error)


class _Events(_Assembly, EventStreamTurnDecoder):
    """ConverseStream's events, one per eventstream message; ``messageStop`` completes the
    turn and the ``metadata`` (usage) after it is read to the body's end."""

    def frame(self, event: str, payload: bytes) -> None:
        if event == "contentBlockDelta":
            data = json_object(payload, "a contentBlockDelta event")
            delta = data.get("delta")
            if type(delta) is dict and type(text := delta.get("text")) is str:
                self.turn.text(text)  # the usual message: a piece of the answer
            else:
                self.delta(data.get("contentBlockIndex"), delta)
        elif event == "contentBlockStart":
            data = json_object(payload, "a contentBlockStart event")
            self.start(data.get("contentBlockIndex"), data.get("start"))
        elif event == "contentBlockStop":
            data = json_object(payload, "a contentBlockStop event")
            self.close(data.get("contentBlockIndex"))
        elif event == "messageStop":
            data = json_object(payload, "a messageStop event")
            self.stop(data.get("stopReason"))
            self.turn.close_calls()
            self.complete = True
        elif event == "metadata":
            self.usage(json_object(payload, "a metadata event").get("usage"))


class _Response(_Assembly, JSONTurnDecoder):
    def body(self, data: bytes) -> bool:
        answer = json_object(data, "the response")
        output = answer.get("output")
        message = output.get("message") if type(output) is dict else None
        content = message.get("content") if type(message) is dict else None
        if type(content) is not list:
            raise invalid("the response has no output.message.content list")
        for index, block in enumerate(content):
            if type(block) is not dict:
                raise invalid("a content block is not an object")
            self._block(index, block)
        self.stop(answer.get("stopReason"))
        self.usage(answer.get("usage"))
        return True

    def _block(self, index: int, block: dict[str, Any]) -> None:
        if "text" in block:
            self.delta(index, {"text": block["text"]})
        elif "toolUse" in block:
            use = block["toolUse"]
            self.start(index, {"toolUse": use})
            arguments = use.get("input") if type(use) is dict else None
            server = self._servers.pop(index, None)
            if server is not None:
                self.turn.server_call(server.call_id, str(server.name), arguments, server.metadata)
                return
            self.turn.call_arguments(self._calls[index], encode_json(arguments or {}).decode())
            self.close(index)
        elif "toolResult" in block:
            result = block["toolResult"]
            server = _result_block(result)
            content = result.get("content")
            if content is not None and type(content) is not list:
                raise invalid("a toolResult block's content is not a list")
            server.content = content or []
            self._server_done(server)
        elif "reasoningContent" in block:
            content = block["reasoningContent"]
            text = content.get("reasoningText") if type(content) is dict else None
            redacted = content.get("redactedContent") if type(content) is dict else None
            if type(text) is dict:
                self.reasoning(index, text.get("text"), text.get("signature"))
            elif type(redacted) is str and redacted:
                self.turn.whole_reasoning("", {PROVIDER: {"redactedContent": redacted}})
            else:
                self.turn.unknown(PROVIDER, block)
        else:
            self.turn.unknown(PROVIDER, block)


class ConverseCodec(BedrockCodec):
    """``POST /model/{modelId}/converse-stream`` streamed (answered in
    ``application/vnd.amazon.eventstream``), ``/converse`` unstreamed."""

    wire = DESCRIPTOR
    operations = ("converse-stream", "converse")
    decoders = (_Events, _Response)

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        return self.post(request_body(request.interaction), stream=stream)
