"""``bedrock-anthropic``: a played case as Amazon Bedrock sends Claude's answer from
InvokeModelWithResponseStream — each of the Messages API's stream events, as
``anthropic-messages`` plays it, base64-encoded into the ``bytes`` of a ``chunk`` message of
``application/vnd.amazon.eventstream`` (no ``ping``; Bedrock's invocation metrics on
``message_stop``), a failure mid-stream an ``exception`` message; or InvokeModel's one
Messages body.

``garbage`` picks how the frame a client cannot read is broken, as for ``bedrock-converse``:
a message whose CRC does not match (``"message-crc"``, the default), a prelude whose CRC does
not match (``"prelude-crc"``), or a prelude cut short as the body ends (``"cut-prelude"``).
"""

from __future__ import annotations

import json
import re
from base64 import b64encode
from collections.abc import Mapping
from typing import ClassVar, Final

from runport.conformance._cases import Case
from runport.conformance._protocols._anthropic_messages import AnthropicMessages
from runport.conformance._protocols._bedrock_converse import BedrockConverse, Garbage
from runport.conformance._wire_protocol import (
    Frame,
    Refusal,
    Transcript,
    WireContext,
    WireRequest,
    json_bytes,
)
from runport.conformance.eventstream import event_message, exception_message

__all__ = ["BedrockAnthropic"]

VERSION: Final = "bedrock-2023-05-31"
_PATH: Final = re.compile(r"/model/([^/]+)/(invoke-with-response-stream|invoke)")
_EXCEPTIONS: Final = {429: "ThrottlingException", 503: "ServiceUnavailableException"}
_METRICS: Final = {"inputTokenCount": 1, "outputTokenCount": 1, "invocationLatency": 1}


def _chunk(sse: bytes) -> bytes | None:
    """The SSE event ``sse`` (``event: …\\ndata: {…}\\n\\n``) as Bedrock's ``chunk`` message;
    ``None`` for a ``ping``, which Bedrock does not relay."""
    data = json.loads(sse.split(b"\ndata: ", 1)[1])
    if data.get("type") == "ping":
        return None
    if data.get("type") == "message_stop":
        data["amazon-bedrock-invocationMetrics"] = _METRICS
    return event_message("chunk", {"bytes": b64encode(json_bytes(data)).decode("ascii")})


class BedrockAnthropic(AnthropicMessages):
    """Claude through Amazon Bedrock's InvokeModel: ``POST
    {base_url}/model/{modelId}/invoke-with-response-stream`` (``/invoke`` unstreamed), the
    body Anthropic's Messages body with ``anthropic_version: "bedrock-2023-05-31"`` and
    neither ``model`` nor ``stream`` (refused with Bedrock's 400 otherwise); the answer as
    ``anthropic-messages`` plays it, each event in a ``chunk`` message."""

    name: ClassVar[str] = "bedrock-anthropic"
    endpoint: ClassVar[str] = "POST {base_url}/model/{modelId}/invoke-with-response-stream"
    content_type: ClassVar[str] = "application/vnd.amazon.eventstream"
    error_status: ClassVar[int] = 500

    def __init__(self, garbage: Garbage = "message-crc") -> None:
        self.garbage = garbage

    def recognise(self, request: WireRequest) -> bool | str:
        found = _PATH.fullmatch(request.path)
        if found is None:
            return self.endpoint
        return found[2] == "invoke-with-response-stream"

    def check(self, request: WireRequest, case: Case) -> Refusal | None:
        body = request.json if isinstance(request.json, Mapping) else {}
        problem = None
        if body.get("anthropic_version") != VERSION:
            problem = f"anthropic_version must be {VERSION!r}"
        for extraneous in ("model", "stream"):
            if extraneous in body:
                problem = f"extraneous key [{extraneous}] is not permitted"
        if problem is not None:
            return Refusal(400, json_bytes({"message": problem}), problem)
        return super().check(request, case)

    def stream(self, case: Case, context: WireContext) -> Transcript:
        sse = super().stream(case, context)
        opening = [chunk for frame in sse.opening if (chunk := _chunk(frame)) is not None]
        steps = [
            Frame(chunk, frame.carries) for frame in sse.steps if (chunk := _chunk(frame.data))
        ]
        closing = [chunk for frame in sse.closing if (chunk := _chunk(frame)) is not None]
        return Transcript(steps, opening=opening, closing=closing)

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        return exception_message(
            "modelStreamErrorException", f"{context.marker} scripted model stream error"
        )

    def planted_error_frame(self, case: Case, context: WireContext, **planted: str) -> bytes:
        """``error_frame`` with ``planted`` beside its message (law 10's canary), the binary
        frame made again, CRCs and all."""
        return exception_message(
            "modelStreamErrorException",
            f"{context.marker} scripted model stream error",
            **planted,
        )

    def garbage_frame(self, context: WireContext) -> bytes:
        return BedrockConverse(self.garbage).garbage_frame(context)

    def error_body(self, status: int, context: WireContext) -> bytes:
        kind = _EXCEPTIONS.get(status, "InternalServerException")
        return json_bytes({"message": f"{context.marker} scripted {kind}"})

    def __repr__(self) -> str:
        return f"<BedrockAnthropic {self.name!r} garbage={self.garbage!r}>"
