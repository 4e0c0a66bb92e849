"""The Gemini API's ``generateContent`` as a sans-IO codec (docs/codecs.md)."""

from __future__ import annotations

from typing import Final

from runport.contracts import AdapterDescriptor, ExecutionRequest, StreamEvent
from runport.gemini._request import request_body
from runport.gemini._response import ResponseAssembly
from runport.http import (
    HTTPRequest,
    JSONAPICodec,
    JSONTurnDecoder,
    SSETurnDecoder,
    encode_json,
    json_object,
)
from runport.ports import distribution_version

DESCRIPTOR: Final = AdapterDescriptor(
    id="gemini",
    version=distribution_version("runport-gemini"),
    capabilities=["streaming", "structured_output", "text", "tool_calls"],
    provider="gcp.gemini",
)

_MARKER: Final = "a candidate's finishReason"


class GenerateContentCodec(JSONAPICodec):
    """``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` streamed,
    ``:generateContent`` unstreamed; the key goes in ``x-goog-api-key``, never in the URL."""

    def __init__(self, *, model: str, api_key: str | None) -> None:
        super().__init__(
            DESCRIPTOR,
            distribution="runport-gemini",
            model=model,
            api_key=api_key,
            credentials={"x-goog-api-key": api_key},
            decoders=(_Chunks, _Response),
        )

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = encode_json(request_body(request.interaction))
        if stream:
            return HTTPRequest(
                "POST",
                f"v1beta/models/{self.model}:streamGenerateContent",
                body,
                self.headers(stream=True),
                {"alt": "sse"},
            )
        return HTTPRequest(
            "POST", f"v1beta/models/{self.model}:generateContent", body, self.headers(stream=False)
        )


class _Chunks(SSETurnDecoder):
    """Each ``data:`` frame is one response chunk. After the ``finishReason`` the body is
    read to its end for the usage that may follow; an end, reset or stall then completes."""

    marker = _MARKER

    def __init__(
        self, request: ExecutionRequest, secrets: tuple[str, ...], descriptor: AdapterDescriptor
    ) -> None:
        super().__init__(request, descriptor)
        self._assembly = ResponseAssembly(self.turn, secrets)

    def frame(self, event: str, payload: bytes) -> None:
        if event != "message" and event != "error":
            return
        if self._assembly.feed(json_object(payload, "a stream frame")):
            self.complete = True

    def end(self) -> list[StreamEvent]:
        """A call still streaming its arguments when the body ends is whole."""
        events = self.turn.events
        self._assembly.close()
        ended = list(events)
        events.clear()
        return ended


class _Response(JSONTurnDecoder):
    marker = _MARKER

    def __init__(
        self, request: ExecutionRequest, secrets: tuple[str, ...], descriptor: AdapterDescriptor
    ) -> None:
        super().__init__(request, descriptor)
        self._assembly = ResponseAssembly(self.turn, secrets)

    def body(self, data: bytes) -> bool:
        complete = self._assembly.feed(json_object(data, "the response"))
        self._assembly.close()
        return complete
