"""What JSON-over-HTTP providers share (OpenAI, Anthropic and Gemini alike): the headers of a
streamed and an unstreamed request, which way a response is read, and the error shape
``{"error": {"message": …}}``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from runport.contracts import AdapterDescriptor, ExecutionRequest
from runport.http._codec import Codec, HTTPRequest, ResponseDecoder
from runport.http._json import encode_json
from runport.ports import distribution_version

__all__ = [
    "DecoderFactory",
    "JSONAPICodec",
    "bearer_headers",
    "error_message",
    "json_headers",
    "provider_descriptor",
    "reads_as_events",
]


def provider_descriptor(id: str, *, provider: str, distribution: str) -> AdapterDescriptor:
    """The descriptor of a provider's chat codec: it streams, answers with text, tool calls
    and structured output, and its version is its distribution's."""
    return AdapterDescriptor(
        id=id,
        version=distribution_version(distribution),
        capabilities=["streaming", "structured_output", "text", "tool_calls"],
        provider=provider,
    )


def json_headers(
    user_agent: str, credentials: Mapping[str, str], *, events: str = "text/event-stream"
) -> tuple[dict[str, str], dict[str, str]]:
    """``(streamed, unstreamed)`` request headers: a JSON body, the credentials, and an
    ``Accept`` for the stream's media type (``events``, an SSE stream unless given) or a JSON
    answer."""
    base = {"User-Agent": user_agent, "Content-Type": "application/json", **credentials}
    return {**base, "Accept": events}, {**base, "Accept": "application/json"}


def bearer_headers(
    user_agent: str, api_key: str | None, *, events: str
) -> tuple[dict[str, str], dict[str, str]]:
    """``json_headers`` for a provider whose key, when there is one, goes as
    ``Authorization: Bearer`` (none is sent without one: a local server, or a request another
    way signs)."""
    credentials = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return json_headers(user_agent, credentials, events=events)


def reads_as_events(stream: bool, media_type: str) -> bool:
    """Whether a response body is read as an event stream: it is read as what it says it is,
    so a server that ignores the request's ``stream`` either way is still understood, and an
    unlabelled body is read as what was asked for."""
    return media_type == "text/event-stream" or (stream and media_type != "application/json")


def error_message(body: Any) -> Any:
    """The raw ``message`` of ``{"error": {"message": …}}`` (``None`` when absent); a codec's
    ``error_text`` may return it as it is, the driver bounds and redacts it."""
    if type(body) is dict:
        error = body.get("error")
        if type(error) is dict:
            return error.get("message")
    return None


DecoderFactory: TypeAlias = Callable[
    [ExecutionRequest, tuple[str, ...], AdapterDescriptor], ResponseDecoder
]
"""A decoder class of a JSON API codec: built per call from the request, the secrets to keep
out of messages and the codec's descriptor."""


class JSONAPICodec(Codec):
    """The setup every JSON-over-HTTP codec shares: the model it asks for in its descriptor,
    the credentials in the headers (and among the secrets), one decoder for an event stream
    and one for a whole JSON body, and ``{"error": {"message": …}}`` errors. A provider
    writes ``encode`` and its two decoders.

    ``credentials`` with an empty value are left out, so a key that is absent sends no header.
    """

    def __init__(
        self,
        descriptor: AdapterDescriptor,
        *,
        distribution: str,
        model: str,
        api_key: str | None,
        credentials: Mapping[str, str | None],
        decoders: tuple[DecoderFactory, DecoderFactory],
    ) -> None:
        self.model = model
        self._descriptor = descriptor.model_copy(update={"model": model})
        if api_key:
            self.secrets = (api_key,)
        self._stream_headers, self._json_headers = json_headers(
            f"{distribution}/{descriptor.version}",
            {name: value for name, value in credentials.items() if value},
        )
        self._decoders = decoders

    def descriptor(self) -> AdapterDescriptor:
        return self._descriptor

    def decoder(
        self, request: ExecutionRequest, *, stream: bool, media_type: str
    ) -> ResponseDecoder:
        events, whole = self._decoders
        chosen = events if reads_as_events(stream, media_type) else whole
        return chosen(request, self.secrets, self._descriptor)

    def error_text(self, body: Any) -> Any:
        return error_message(body)

    def headers(self, *, stream: bool) -> dict[str, str]:
        return self._stream_headers if stream else self._json_headers

    def post(
        self, path: str, body: Any, *, stream: bool, params: Mapping[str, str] | None = None
    ) -> HTTPRequest:
        """``POST path`` with ``body`` as JSON (``encode_json``: checked, compact) and the
        headers of a streamed or an unstreamed request."""
        return HTTPRequest(
            "POST", path, encode_json(body), self.headers(stream=stream), params or {}
        )
