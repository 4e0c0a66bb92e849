"""OpenAI's Responses API as a sans-IO codec (docs/codecs.md): the request body one way, stream
events or one response object the other, with no I/O of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from pydantic_core import from_json

from runport.contracts import ExecutionRequest, StreamEvent
from runport.http import (
    HTTPRequest,
    JSONTurnDecoder,
    SSETurnDecoder,
    TurnDecoder,
    json_object,
    provider_descriptor,
)
from runport.openai._codec import BearerCodec
from runport.openai._errors import invalid
from runport.openai._request import ResponseFormatMode
from runport.openai._responses._output import STATUS_EVENTS, OutputAssembly
from runport.openai._responses._request import request_body
from runport.ports import PortError

DESCRIPTOR: Final = provider_descriptor(
    "openai-responses", provider="openai", distribution="runport-openai"
)
"""Each codec's descriptor is this one with ``model`` set to the model it asks for."""


class ResponsesCodec(BearerCodec):
    """``POST …/responses``, with ``stream: true`` when streamed. The completion marker is one
    of ``response.completed``, ``response.incomplete``, ``response.failed``."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None,
        response_format_mode: ResponseFormatMode,
        store: bool = False,
    ) -> None:
        super().__init__(
            DESCRIPTOR,
            model=model,
            api_key=api_key,
            response_format_mode=response_format_mode,
            decoders=(_EventStream.for_codec, _Response.for_codec),
        )
        self.store = store

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = request_body(
            request.interaction,
            model=self.model,
            stream=stream,
            response_format_mode=self.response_format_mode,
            store=self.store,
        )
        return self.post("responses", body, stream=stream)


class _OutputDecoder(TurnDecoder):
    """What both decoders keep per call: the response output's assembly."""

    marker = "response.completed, response.incomplete or response.failed"

    def begin(self) -> None:
        self._output = OutputAssembly(self.turn, self.secrets)


class _EventStream(_OutputDecoder, SSETurnDecoder):
    """The event stream: one ``OutputAssembly.event`` per event; nothing after the completion
    marker is read (``finished``)."""

    def feed(self, data: bytes) -> Iterator[StreamEvent]:
        """The hot path, as chat completions' is: a generator whose lookups are hoisted, an
        event of the usual shape (a text delta, a piece of the open reasoning part, an
        announced call's fragment, a citation) yielded straight from the builder with no
        list between."""
        output = self._output
        text_event = self.turn.text_event
        arguments_event = self.turn.arguments_event
        by_position = output.by_position
        reasoning_event = output.reasoning_event
        annotation_added = output.annotation_added
        output_event = output.event
        events = self.turn.events
        loads = from_json
        for event, payload in self._sse.feed(data):
            try:
                value = loads(payload)
            except ValueError:
                raise invalid("a stream event is not JSON") from None
            if type(value) is dict:
                number = value.get("sequence_number")
                if number is not None:
                    output.sequenced(number)
                kind = value.get("type")
                if kind == "response.output_text.delta":
                    piece = value.get("delta")
                    speaking = output.speaking
                    if (
                        speaking is not None
                        and value.get("output_index") == speaking
                        and type(piece) is str
                        and piece
                    ):
                        yield text_event(piece)
                        continue
                elif kind == "response.function_call_arguments.delta":
                    index = by_position.get(value.get("output_index"))
                    piece = value.get("delta")
                    if index is not None and type(piece) is str and piece:
                        single = arguments_event(index, piece)
                        if single is not None:
                            yield single
                            continue
                elif kind == "response.reasoning_summary_text.delta":
                    single = reasoning_event(value)
                    if single is not None:
                        yield single
                        continue
                elif kind == "response.output_text.annotation.added":
                    cited = annotation_added(value)  # one event or none, nothing owed before
                    if cited is not None:
                        yield cited
                    continue
                elif kind in STATUS_EVENTS and output.began:
                    continue  # nothing to read: the finished item says what the tool did
                if kind is not None:  # ``completed(self._event, …)``, without its generator
                    try:
                        done = output_event(value)
                    except PortError:
                        yield from events  # what the frame completed before it failed
                        events.clear()
                        raise
                    if events:
                        yield from events
                        events.clear()
                    if done:
                        self.complete = self.finished = True
                        return
                    continue
            yield from self.completed(self._event, event, value)
            if self.finished:
                return

    def frame(self, event: str, payload: bytes) -> None:
        value = json_object(payload, "a stream event")
        number = value.get("sequence_number") if type(value) is dict else None
        if number is not None:
            self._output.sequenced(number)
        self._event(event, value)

    def _event(self, event: str, value: Any) -> None:
        if type(value) is not dict:
            raise invalid("a stream event is not a JSON object")
        if "type" not in value and event != "message":
            value = {**value, "type": event}  # the kind named by the SSE event line alone
        if self._output.event(value):
            self.complete = self.finished = True


class _Response(_OutputDecoder, JSONTurnDecoder):
    """One response object, read when it has all arrived."""

    def body(self, data: bytes) -> bool:
        self._output.response(json_object(data, "the response"))
        return True
