"""The chat-completions protocol as a sans-IO codec (docs/codecs.md): the request body one
way, SSE frames or one JSON completion the other, with no I/O of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic_core import from_json

from runport.contracts import (
    AdapterDescriptor,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
)
from runport.http import HTTPRequest, JSONAPICodec, ResponseDecoder, SSEDecoder, encode_json
from runport.openai._errors import error_frame, error_message, invalid
from runport.openai._request import ResponseFormatMode, request_body
from runport.openai._turn import TurnAssembler
from runport.ports import PortError, distribution_version

DESCRIPTOR = AdapterDescriptor(
    id="openai-chat",
    version=distribution_version("runport-openai"),
    capabilities=["streaming", "structured_output", "text", "tool_calls"],
    provider="openai",
)
"""Each codec's descriptor is this one with ``model`` set to the model it asks for."""


class ChatCompletionsCodec(JSONAPICodec):
    """``POST …/chat/completions``, with ``stream: true`` (and ``include_usage``) when
    streamed. The completion marker is a non-null ``finish_reason`` or ``data: [DONE]``."""

    def __init__(
        self, *, model: str, api_key: str | None, response_format_mode: ResponseFormatMode
    ) -> None:
        super().__init__(
            DESCRIPTOR,
            distribution="runport-openai",
            model=model,
            api_key=api_key,
            credentials={"Authorization": f"Bearer {api_key}" if api_key else None},
            decoders=(_ChunkStream, _Completion),
        )
        self.response_format_mode: ResponseFormatMode = response_format_mode

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = request_body(
            request.interaction,
            model=self.model,
            stream=stream,
            response_format_mode=self.response_format_mode,
        )
        return HTTPRequest(
            "POST",
            "chat/completions",
            encode_json(body),
            self.headers(stream=stream),
        )

    def error_text(self, body: Any) -> Any:
        return error_message(body)


class _ChunkStream(ResponseDecoder):
    """SSE frames of ``chat.completion.chunk``s, one ``feed_chunk`` per frame."""

    __slots__ = (
        "_descriptor",
        "_emitted",
        "_request",
        "_secrets",
        "_sse",
        "_turn",
        "complete",
        "finished",
    )

    def __init__(
        self, request: ExecutionRequest, secrets: tuple[str, ...], descriptor: AdapterDescriptor
    ) -> None:
        self._request = request
        self._descriptor = descriptor
        self._secrets = secrets
        self._sse = SSEDecoder()
        self._emitted: list[StreamEvent] = []
        self._turn = TurnAssembler(self._emitted.append, secrets)
        self.complete = False
        self.finished = False

    def feed(self, data: bytes) -> Iterator[StreamEvent]:
        """The hot path: a generator, so each frame's event reaches the caller (and is
        dropped) before the next frame is decoded; lookups are hoisted out of the loop, and a
        frame of the usual shape (one text delta, one argument fragment) is yielded straight
        from ``single_event``, with no callback and no list between."""
        turn = self._turn
        emitted = self._emitted
        single_event = turn.single_event
        feed_chunk = turn.feed_chunk
        loads = from_json
        for event, payload in self._sse.feed(data):
            if payload == b"[DONE]":
                self.finished = self.complete = True
                return
            if event != "message" and event != "error":
                continue  # e.g. `event: ping` keep-alives, whose data need not be JSON
            try:
                chunk = loads(payload)
            except ValueError:
                raise invalid("a stream frame is not JSON") from None
            if event == "error":
                raise error_frame(
                    chunk.get("error", chunk) if type(chunk) is dict else None, self._secrets
                )
            single = single_event(chunk)
            if single is not None:
                yield single
                continue
            feed_chunk(chunk)
            if emitted:
                if len(emitted) == 1:
                    yield emitted.pop()
                else:
                    yield from emitted
                    emitted.clear()
        if turn.finish_reason is not None:
            self.complete = True

    def receipt(self) -> ExecutionReceipt:
        if not self.complete:
            raise _truncated()
        return self._turn.receipt(self._request, self._descriptor)


class _Completion(ResponseDecoder):
    """One ``chat.completion`` JSON body, decoded when it has all arrived."""

    __slots__ = ("_descriptor", "_parts", "_request", "_secrets", "_turn", "complete", "finished")

    def __init__(
        self, request: ExecutionRequest, secrets: tuple[str, ...], descriptor: AdapterDescriptor
    ) -> None:
        self._request = request
        self._descriptor = descriptor
        self._secrets = secrets
        self._parts: list[bytes] = []
        self._turn = TurnAssembler(_discard, secrets)
        self.complete = False
        self.finished = False

    def feed(self, data: bytes) -> list[StreamEvent]:
        self._parts.append(data)
        return []

    def end(self) -> list[StreamEvent]:
        try:
            completion = from_json(b"".join(self._parts))
        except ValueError:
            raise invalid("the response is not JSON") from None
        self._parts.clear()
        events: list[StreamEvent] = []
        self._turn.emit = events.append
        self._turn.feed_completion(completion)
        self.complete = True
        return events

    def receipt(self) -> ExecutionReceipt:
        if not self.complete:
            raise _truncated()
        return self._turn.receipt(self._request, self._descriptor)


def _discard(event: StreamEvent) -> None:
    """Events of an unstreamed completion: the same assembly, with nobody listening."""


def _truncated() -> PortError:
    return PortError(
        ErrorCode.RUNTIME_STREAM_TRUNCATED,
        "the stream ended before its completion marker (finish_reason or [DONE])",
    )
