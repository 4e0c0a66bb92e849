"""The Messages API as a sans-IO codec (docs/codecs.md): the request body one way, stream
events or one JSON message the other, with no I/O of its own."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

from runport.anthropic._answer import raw_member
from runport.anthropic._errors import error_event, invalid
from runport.anthropic._message import MessageAssembly
from runport.anthropic._request import answer_tool_in_use, request_body
from runport.contracts import ExecutionRequest, StreamEvent
from runport.http import (
    HTTPRequest,
    JSONAPICodec,
    JSONTurnDecoder,
    SSETurnDecoder,
    TurnDecoder,
    json_object,
    provider_descriptor,
)
from runport.ports import PortError

DESCRIPTOR: Final = provider_descriptor(
    "anthropic-messages", provider="anthropic", distribution="runport-anthropic"
)

ANTHROPIC_VERSION: Final = "2023-06-01"
VERTEX_ANTHROPIC_VERSION: Final = "vertex-2023-10-16"
"""What Vertex AI wants in the body's ``anthropic_version`` (in place of the header)."""
_VERTEX_MODEL: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]*")
"""A model id Vertex AI's path can carry as it is (``claude-sonnet-4@20250514``)."""
"""The ``anthropic-version`` header: the API version whose shapes this codec reads."""


class MessagesCodec(JSONAPICodec):
    """``POST /v1/messages``, with ``stream: true`` when streamed. The completion marker is
    ``message_stop``."""

    def __init__(
        self, *, model: str, api_key: str | None, max_tokens: int, models: str | None = None
    ) -> None:
        if models and not _VERTEX_MODEL.fullmatch(model):
            raise ValueError(
                "model must name a Claude model on Vertex AI (letters, digits, '.', '_', '-', "
                f"'@'), e.g. claude-sonnet-4@20250514, not {model!r}"
            )
        version = None if models else ANTHROPIC_VERSION  # Vertex AI takes it in the body
        super().__init__(
            DESCRIPTOR,
            distribution="runport-anthropic",
            model=model,
            api_key=api_key,
            credentials={"anthropic-version": version, "x-api-key": api_key},
            decoders=(_EventStream.for_codec, _Message.for_codec),
        )
        self.max_tokens = max_tokens
        self.models = models
        """Vertex AI's path of a project's Anthropic models; ``None``: Anthropic's own API."""

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = request_body(
            request.interaction, model=self.model, max_tokens=self.max_tokens, stream=stream
        )
        if self.models is None:
            return self.post("v1/messages", body, stream=stream)
        # Vertex AI names the model in the path and the version in the body
        del body["model"]
        body = {"anthropic_version": VERTEX_ANTHROPIC_VERSION, **body}
        verb = "streamRawPredict" if stream else "rawPredict"
        return self.post(f"{self.models}/{self.model}:{verb}", body, stream=stream)


class MessagesEvents(TurnDecoder):
    """Anthropic's Messages answer read onto a call's turn, for any codec whose transport
    carries its events or its message: Anthropic's own server-sent events, or Amazon Bedrock's
    eventstream, whose ``chunk`` messages each hold one event (``runport.bedrock``).

    A codec's decoder subclasses it beside its transport's ``TurnDecoder``
    (``SSETurnDecoder``, ``EventStreamTurnDecoder``, ``JSONTurnDecoder``) and hands it what the
    transport unwrapped: ``event`` one stream event (the JSON object of a ``data:`` line),
    ``message`` one whole Messages response body. ``message_stop`` completes the turn; an
    ``error`` event fails the call with its code. Thinking blocks are reasoning kept with their
    signatures under ``provider_metadata["anthropic"]``, and a structured answer is the input
    of the forced answer tool, as for ``AnthropicMessagesAdapter``.
    """

    marker = "message_stop"

    def begin(self) -> None:
        answer_tool = answer_tool_in_use(self.request.interaction)
        self._message = MessageAssembly(self.turn, answer_tool=answer_tool)

    def event(self, data: dict[str, Any], *, name: str = "") -> None:
        """Read one stream event; ``name`` is the transport's own name for it (an SSE
        ``event:`` line), where one is given."""
        kind = data.get("type")
        message = self._message
        if kind == "content_block_delta":
            message.delta(data.get("index"), data.get("delta"))
        elif kind == "content_block_start":
            message.start(data.get("index"), data.get("content_block"))
        elif kind == "content_block_stop":
            message.stop(data.get("index"))
        elif kind == "message_start":
            start = data.get("message")
            if type(start) is not dict:
                raise invalid("message_start holds no message")
            message.usage(start.get("usage"))
        elif kind == "message_delta":
            delta = data.get("delta")
            if type(delta) is dict:
                message.stop_reason(delta.get("stop_reason"))
            message.usage(data.get("usage"))
        elif kind == "message_stop":
            message.close()
            self.complete = self.finished = True
        elif kind == "error" or name == "error":
            raise error_event(data, self.secrets)

    def message(self, data: bytes) -> None:
        """Read one whole Messages response body (the JSON bytes as the server wrote them)."""
        message = json_object(data, "the response")
        if message.get("type") == "error":
            raise error_event(message, self.secrets)
        content = message.get("content")
        if type(content) is not list:
            raise invalid("the response has no content list")
        assembly = self._message
        for index, block in enumerate(content):
            assembly.start(index, block)
            if assembly.answers(index):
                # The answer's text as the server wrote it, not re-serialized (ADR 0025).
                raw = raw_member(data.decode("utf-8", "surrogatepass"), index, "input")
                if raw is not None:
                    assembly.delta(index, {"type": "input_json_delta", "partial_json": raw})
            assembly.stop(index)
        assembly.stop_reason(message.get("stop_reason"))
        assembly.usage(message.get("usage"))


class _EventStream(MessagesEvents, SSETurnDecoder):
    def feed(self, data: bytes) -> Iterator[StreamEvent]:
        """The hot path: a ``content_block_delta`` of the usual shape (a piece of text, of a
        call's arguments, of thinking; a citation) is yielded straight from
        ``MessageAssembly.single``, with no list between; a block's start and stop (a server
        tool's call and result among them) and every other frame are read here as ``frame``
        reads them, with ``completed``'s order inlined: what a frame completed, then its
        failure."""
        message = self._message
        single = message.single
        events = self.turn.events
        for event, payload in self._sse.feed(data):
            if event == "ping":
                continue
            frame = json_object(payload, "a stream event")
            kind = frame.get("type")
            if kind == "content_block_delta":
                index, delta = frame.get("index"), frame.get("delta")
                made = single(index, delta)
                if made is not None:
                    yield made
                    continue
            try:
                if kind == "content_block_delta":
                    message.delta(index, delta)
                elif kind == "content_block_start":
                    message.start(frame.get("index"), frame.get("content_block"))
                elif kind == "content_block_stop":
                    message.stop(frame.get("index"))
                else:
                    self.event(frame, name=event)
            except PortError:
                yield from events  # what the frame completed before it failed
                events.clear()
                raise
            if events:
                yield from events
                events.clear()
            if self.finished:
                return

    def frame(self, event: str, payload: bytes) -> None:
        if event == "ping":
            return
        data = json_object(payload, "a stream event")
        if data.get("type") == "content_block_delta":
            self._message.delta(data.get("index"), data.get("delta"))  # the usual event
        else:
            self.event(data, name=event)


class _Message(MessagesEvents, JSONTurnDecoder):
    def body(self, data: bytes) -> bool:
        self.message(data)
        return True
