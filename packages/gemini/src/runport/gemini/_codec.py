"""The Gemini API's ``generateContent`` as a sans-IO codec (docs/codecs.md)."""

from __future__ import annotations

import re
from typing import Any, Final

from runport.contracts import ExecutionRequest, StreamEvent
from runport.gemini._request import request_body
from runport.gemini._response import ResponseAssembly
from runport.http import (
    HTTPRequest,
    JSONAPICodec,
    JSONTurnDecoder,
    SSETurnDecoder,
    TurnDecoder,
    json_object,
    provider_descriptor,
)

DESCRIPTOR: Final = provider_descriptor(
    "gemini", provider="gcp.gemini", distribution="runport-gemini"
)


_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_DURATION = re.compile(r"(\d{1,12})(?:\.(\d{1,9}))?s")
"""A protobuf ``Duration`` in its JSON form: seconds, up to nine fractional digits, then "s"."""


def retry_delay_ms(body: Any) -> float | None:
    """The back-off in a Google API error body, in milliseconds, or ``None``: the
    ``retryDelay`` of the first ``RetryInfo`` in ``error.details``. Anything unreadable is
    ``None`` rather than a failure of the error report."""
    error = body.get("error") if type(body) is dict else None
    details = error.get("details") if type(error) is dict else None
    if type(details) is not list:
        return None
    for detail in details:
        if type(detail) is dict and detail.get("@type") == _RETRY_INFO:
            delay = detail.get("retryDelay")
            found = _DURATION.fullmatch(delay) if type(delay) is str else None
            if found is None:
                return None
            whole, fraction = found.groups()
            return (int(whole) + int((fraction or "0").ljust(9, "0")) / 1e9) * 1000
    return None


class GenerateContentCodec(JSONAPICodec):
    """``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` streamed,
    ``:generateContent`` unstreamed (on Vertex AI, ``models`` is the project's path); the key
    goes in ``x-goog-api-key``, never in the URL."""

    def __init__(self, *, model: str, api_key: str | None, models: str = "v1beta/models") -> None:
        super().__init__(
            DESCRIPTOR,
            distribution="runport-gemini",
            model=model,
            api_key=api_key,
            credentials={"x-goog-api-key": api_key},
            decoders=(_Chunks.for_codec, _Response.for_codec),
        )
        self.models = models
        """The path of the models: ``v1beta/models``, or a Vertex AI project's."""

    def retry_after_ms(self, body: Any) -> float | None:
        """The ``retryDelay`` of a ``google.rpc.RetryInfo`` among the error's ``details``
        (a 429 from the Gemini API says when to come back there, not in a header)."""
        return retry_delay_ms(body)

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = request_body(request.interaction)
        if stream:
            path = f"{self.models}/{self.model}:streamGenerateContent"
            return self.post(path, body, stream=True, params={"alt": "sse"})
        return self.post(f"{self.models}/{self.model}:generateContent", body, stream=False)


class _ResponseDecoder(TurnDecoder):
    """What both decoders keep per call: the response's assembly."""

    marker = "a candidate's finishReason"

    def begin(self) -> None:
        self._assembly = ResponseAssembly(self.turn, self.secrets)


class _Chunks(_ResponseDecoder, SSETurnDecoder):
    """Each ``data:`` frame is one response chunk. After the ``finishReason`` the body is
    read to its end for the usage that may follow; an end, reset or stall then completes."""

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


class _Response(_ResponseDecoder, JSONTurnDecoder):
    def body(self, data: bytes) -> bool:
        complete = self._assembly.feed(json_object(data, "the response"))
        self._assembly.close()
        return complete
