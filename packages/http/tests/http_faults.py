"""Test doubles for the HTTP layer: a small line-protocol codec, and the replies in its
protocol that the shared loopback upstream (``runport.conformance.loopback``) plays."""

from __future__ import annotations

import json
from typing import Any

from runport.conformance.loopback import SSE, Connection, head
from runport.contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Message,
    StreamEvent,
    fingerprint,
)
from runport.http import Codec, HTTPRequest, ResponseDecoder, SSEDecoder, encode_json
from runport.ports import PortError

API_KEY = "sk-http-test-SECRET-9d2e71"


def make_request(text: str = "hello", **policy: Any) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test/0",
            contract_id="http-test",
            contract_version="1.0.0",
            messages=[Message(role="user", content=text)],
            output_schema={"type": "string"},
            runtime_policy=policy,
        )
    )


# --- a codec -------------------------------------------------------------------------------

DESCRIPTOR = AdapterDescriptor(id="lines", version="1.0.0", capabilities=["streaming", "text"])


class LineCodec(Codec):
    """``POST …/lines``. Streamed: SSE ``data:`` frames of text, ``data: [END]`` the marker.
    Unstreamed: ``{"text": …}``. Errors: ``{"error": {"message": …}}``."""

    secrets = (API_KEY,)

    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    def encode(self, request: ExecutionRequest, *, stream: bool) -> HTTPRequest:
        body = {"prompt": request.interaction.messages[-1].content, "stream": stream}
        return HTTPRequest("POST", "lines", encode_json(body), {"x-key": API_KEY})

    def decoder(
        self, request: ExecutionRequest, *, stream: bool, media_type: str
    ) -> ResponseDecoder:
        return LineDecoder(request, sse=media_type == "text/event-stream")

    def error_text(self, body: Any) -> Any:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            return body["error"].get("message")
        return None


class LineDecoder(ResponseDecoder):
    def __init__(self, request: ExecutionRequest, *, sse: bool) -> None:
        self.request = request
        self.sse = SSEDecoder() if sse else None
        self.parts: list[str] = []
        self.raw: list[bytes] = []

    def feed(self, data: bytes) -> list[StreamEvent]:
        if self.sse is None:
            self.raw.append(data)
            return []
        events: list[StreamEvent] = []
        for _, payload in self.sse.feed(data):
            if payload == b"[END]":
                self.complete = self.finished = True
                break
            text = payload.decode()
            self.parts.append(text)
            events.append(Delta(text=text))
        return events

    def end(self) -> list[StreamEvent]:
        if self.sse is not None:
            return []
        try:
            text = json.loads(b"".join(self.raw))["text"]
        except (ValueError, KeyError, TypeError):
            raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, "not a lines answer") from None
        self.parts.append(text)
        self.complete = True
        return [Delta(text=text)]

    def receipt(self) -> ExecutionReceipt:
        if not self.complete:
            raise PortError(ErrorCode.RUNTIME_STREAM_TRUNCATED, "no [END]")
        text = "".join(self.parts) or None
        return ExecutionReceipt(
            adapter=DESCRIPTOR,
            request_fingerprint=fingerprint(self.request.interaction),
            output_fingerprint=fingerprint(text),
            output=text,
            output_schema_valid=True,
            text=text,
        )


# --- replies this codec reads --------------------------------------------------------------


def echo(connection: Connection, request: bytes) -> bool:
    """Five frames naming the call (``{prompt}/0`` … ``{prompt}/4``): calls kept apart show."""
    prompt = json.loads(request.partition(b"\r\n\r\n")[2])["prompt"]
    connection.write(head("200 OK", SSE))
    for index in range(5):
        connection.chunk(f"data: {prompt}/{index}\n\n".encode())
    connection.chunk(b"data: [END]\n\n")
    connection.write(b"0\r\n\r\n")
    return True


def frames(*texts: str, end: bool = True) -> list[bytes]:
    out = [f"data: {text}\n\n".encode() for text in texts]
    return [*out, b"data: [END]\n\n"] if end else out
