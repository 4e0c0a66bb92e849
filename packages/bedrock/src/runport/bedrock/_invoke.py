"""Anthropic's Claude models through Bedrock's InvokeModel as a sans-IO codec
(docs/codecs.md): Anthropic's Messages body with Bedrock's ``anthropic_version`` one way;
InvokeModelWithResponseStream's eventstream, whose ``chunk`` messages each carry one
Anthropic stream event base64-encoded, or InvokeModel's one Messages body, the other."""

from __future__ import annotations

import binascii
from base64 import b64decode
from typing import Final

from runport.anthropic import MessagesEvents, messages_body
from runport.bedrock._codec import BedrockCodec, bedrock_descriptor, invalid
from runport.contracts import ExecutionRequest
from runport.http import EventStreamTurnDecoder, HTTPRequest, JSONTurnDecoder, json_object

DESCRIPTOR: Final = bedrock_descriptor("bedrock-anthropic")

BEDROCK_ANTHROPIC_VERSION: Final = "bedrock-2023-05-31"
"""What Bedrock wants in the body's ``anthropic_version`` (Anthropic's own API takes a header)."""


class _Chunks(MessagesEvents, EventStreamTurnDecoder):
    """One Anthropic stream event per ``chunk`` message: ``{"bytes": base64(event JSON)}``."""

    def frame(self, event: str, payload: bytes) -> None:
        if event != "chunk":
            return  # no other event carries the answer
        encoded = json_object(payload, "a chunk event").get("bytes")
        if type(encoded) is not str:
            raise invalid("a chunk event holds no bytes string")
        try:
            data = b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise invalid("a chunk event's bytes are not base64") from None
        self.event(json_object(data, "a chunk's stream event"))


class _Body(MessagesEvents, JSONTurnDecoder):
    def body(self, data: bytes) -> bool:
        self.message(data)
        return True


class AnthropicInvokeCodec(BedrockCodec):
    """``POST /model/{modelId}/invoke-with-response-stream`` streamed (answered in
    ``application/vnd.amazon.eventstream``), ``/invoke`` unstreamed. The body is Anthropic's
    Messages body with ``anthropic_version`` and neither ``model`` (it is in the path) nor
    ``stream`` (the operation says it), which Bedrock refuses."""

    wire = DESCRIPTOR
    operations = ("invoke-with-response-stream", "invoke")
    decoders = (_Chunks, _Body)

    def __init__(self, *, model: str, api_key: str | None, max_tokens: int) -> None:
        super().__init__(model=model, api_key=api_key)
        self.max_tokens = max_tokens

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = messages_body(request.interaction, max_tokens=self.max_tokens)
        return self.post({"anthropic_version": BEDROCK_ANTHROPIC_VERSION, **body}, stream=stream)
