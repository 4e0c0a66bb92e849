"""The chat-completions protocol as a sans-IO codec (docs/codecs.md): the request body one
way, SSE frames or one JSON completion the other, with no I/O of its own."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic_core import from_json

from runport.contracts import (
    AdapterDescriptor,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
)
from runport.http import (
    DecoderFactory,
    HTTPRequest,
    JSONAPICodec,
    JSONTurnDecoder,
    SSETurnDecoder,
    TurnDecoder,
    provider_descriptor,
)
from runport.openai._chunks import ChunkAssembly
from runport.openai._errors import error_frame, error_message, invalid, spent_quota
from runport.openai._request import (
    CallIdRule,
    ReasoningField,
    ResponseFormatMode,
    request_body,
)
from runport.ports import PortError

DESCRIPTOR = provider_descriptor("openai-chat", provider="openai", distribution="runport-openai")
"""Each codec's descriptor is this one with ``model`` set to the model it asks for."""


class BearerCodec(JSONAPICodec):
    """What OpenAI's two protocols share: the key as ``Authorization: Bearer`` (none when
    absent) or bare in the header ``api_key_header`` names (Azure's ``api-key``), how a
    structured answer is asked for, and OpenAI's error shapes."""

    def __init__(
        self,
        descriptor: AdapterDescriptor,
        *,
        model: str,
        api_key: str | None,
        response_format_mode: ResponseFormatMode,
        decoders: tuple[DecoderFactory, DecoderFactory],
        api_key_header: str = "Authorization",
    ) -> None:
        bearer = api_key_header.lower() == "authorization"
        key = f"Bearer {api_key}" if api_key and bearer else api_key
        super().__init__(
            descriptor,
            distribution="runport-openai",
            model=model,
            api_key=api_key,
            credentials={api_key_header: key},
            decoders=decoders,
        )
        self.response_format_mode: ResponseFormatMode = response_format_mode

    def error_text(self, body: Any) -> Any:
        return error_message(body)

    def error_code(self, status: int, body: Any) -> ErrorCode | None:
        """A 429 that says the account's quota is spent (``insufficient_quota``) is
        permanent: waiting does not refill it, so a host's retry would only spend its
        budget. Any other status keeps its own reading."""
        if status == 429 and spent_quota(body):
            return ErrorCode.RUNTIME_PERMANENT
        return None


class ChatCompletionsCodec(BearerCodec):
    """``POST …/chat/completions``, with ``stream: true`` (and ``stream_options.include_usage``
    unless ``include_usage`` is false) when streamed. The completion marker is
    ``data: [DONE]`` (or a clean end of the body after a finish reason). ``path`` and
    ``params`` say where it posts under the base URL (Azure's deployments and
    ``api-version``); ``call_ids`` the rule the tool-call ids sent back keep; ``secrets``
    further credentials kept out of every message (a token the adapter's auth sends)."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None,
        response_format_mode: ResponseFormatMode,
        send_reasoning_as: ReasoningField | None = None,
        include_usage: bool = True,
        call_ids: CallIdRule = "any",
        api_key_header: str = "Authorization",
        descriptor: AdapterDescriptor = DESCRIPTOR,
        path: str = "chat/completions",
        params: Mapping[str, str] | None = None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        super().__init__(
            descriptor,
            model=model,
            api_key=api_key,
            response_format_mode=response_format_mode,
            decoders=(_ChunkStream.for_codec, _Completion.for_codec),
            api_key_header=api_key_header,
        )
        self.send_reasoning_as: ReasoningField | None = send_reasoning_as
        self.include_usage = include_usage
        self.call_ids: CallIdRule = call_ids
        self._path = path
        self._params = dict(params or {})
        self.secrets = (*self.secrets, *(secret for secret in secrets if secret))

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = request_body(
            request.interaction,
            model=self.model,
            stream=stream,
            response_format_mode=self.response_format_mode,
            send_reasoning_as=self.send_reasoning_as,
            include_usage=self.include_usage,
            call_ids=self.call_ids,
        )
        return self.post(self._path, body, stream=stream, params=self._params)


class _ChunkDecoder(TurnDecoder):
    """What both decoders keep per call: the chunks' assembly (the calls it holds closed once
    the answer is whole)."""

    empty_arguments = ""  # a call whose arguments never came keeps the empty text it had

    def begin(self) -> None:
        self._chunks = ChunkAssembly(self.turn, self.secrets)

    def receipt(self) -> ExecutionReceipt:
        if self.complete:
            self._chunks.close()
        return super().receipt()


class _ChunkStream(_ChunkDecoder, SSETurnDecoder):
    """SSE frames of ``chat.completion.chunk``s, one ``feed_chunk`` per frame. The completion
    marker is ``data: [DONE]``; a body that ends cleanly after a finish reason is whole too
    (a server that sends no ``[DONE]``). A finish reason alone is not the marker — servers
    put one on every chunk — so a reset or stall before ``[DONE]`` fails like any other
    before the marker."""

    marker = "[DONE]"

    def feed(self, data: bytes) -> Iterator[StreamEvent]:
        """The hot path: a generator, so each frame's event reaches the caller (and is
        dropped) before the next frame is decoded; lookups are hoisted out of the loop, and a
        frame of the usual shape (one text delta, one piece of reasoning, one argument
        fragment) is yielded straight from ``single_event``, with no list between."""
        chunks = self._chunks
        events = self.turn.events
        single_event = chunks.single_event
        feed_chunk = chunks.feed_chunk
        loads = from_json
        for event, payload in self._sse.feed(data):
            if event == "message" and payload != b"[DONE]":
                try:
                    chunk = loads(payload)
                except ValueError:
                    raise invalid("a stream frame is not JSON") from None
                single = single_event(chunk)
                if single is not None:
                    yield single
                    continue
                try:
                    feed_chunk(chunk)
                except PortError:
                    yield from events  # what the frame completed before it failed
                    events.clear()
                    raise
            else:
                self.frame(event, payload)
                if self.finished:
                    return
            if events:
                if len(events) == 1:
                    yield events.pop()
                else:
                    yield from events
                    events.clear()

    def frame(self, event: str, payload: bytes) -> None:
        if payload == b"[DONE]":
            self.finished = self.complete = True
        elif event == "message" or event == "error":  # not `event: ping` keep-alives
            try:
                chunk = from_json(payload)
            except ValueError:
                raise invalid("a stream frame is not JSON") from None
            if event == "error":
                raise error_frame(
                    chunk.get("error", chunk) if type(chunk) is dict else None, self.secrets
                )
            self._chunks.feed_chunk(chunk)

    def end(self) -> list[StreamEvent]:
        if self.turn.finish_reason is not None:
            self.complete = True
        return []


class _Completion(_ChunkDecoder, JSONTurnDecoder):
    """One ``chat.completion`` JSON body, read when it has all arrived."""

    def body(self, data: bytes) -> bool:
        try:
            completion = from_json(data)
        except ValueError:
            raise invalid("the response is not JSON") from None
        self._chunks.feed_completion(completion)
        return True
