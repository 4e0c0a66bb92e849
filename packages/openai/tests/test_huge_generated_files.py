"""A 100 MB generated image is bounded by ``max_response_bytes`` (8 MiB by default) as it
arrives, streamed or not, on both OpenAI protocols: the call fails
``TQX_RUNTIME_RESPONSE_TOO_LARGE`` and the connection is closed long before the image ends,
so runport never holds (or reads) the 100 MB (adr/0055-what-the-provider-did-itself.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from runport.conformance.loopback import SSE, Connection, Handler, head, serving
from runport.conformance.providers import make_request, run_streamed
from runport.contracts import ErrorCode
from runport.openai import OpenAIChatAdapter, OpenAIResponsesAdapter
from runport.ports import DEFAULT_MAX_RESPONSE_BYTES, PortError, RuntimeAdapter

IMAGE_BYTES = 100 * 1024 * 1024
PIECE = b"A" * (1 << 20)


class HugeImage:
    """An answer whose image's base64 runs to 100 MB: ``before`` it, then the base64 written
    a mebibyte at a time while the client reads, then ``after``; ``sent`` counts what the
    client took before it went."""

    def __init__(self, before: str, after: str) -> None:
        self.before, self.after = before.encode(), after.encode()
        self.sent = 0

    def handler(self, *, streamed: bool) -> Handler:
        def serve(connection: Connection, request: bytes) -> bool:
            if streamed:
                connection.write(head("200 OK", SSE))
                write = connection.chunk
            else:
                size = len(self.before) + IMAGE_BYTES + len(self.after)
                connection.write(
                    head(
                        "200 OK", {"Content-Type": "application/json", "Content-Length": str(size)}
                    )
                )
                write = connection.write
            write(self.before)
            while self.sent < IMAGE_BYTES and write(PIECE):
                self.sent += len(PIECE)
            if self.sent >= IMAGE_BYTES:
                write(self.after)
            return False

        return serve


def responses(streamed: bool) -> HugeImage:
    if streamed:
        event = {"type": "response.image_generation_call.partial_image", "item_id": "ig_1",
                 "output_index": 0, "partial_image_index": 0, "partial_image_b64": "@"}  # fmt: skip
        before, after = f"data: {json.dumps(event)}".split("@")
        return HugeImage(before, after + "\n\n")
    item = {"id": "ig_1", "type": "image_generation_call", "status": "completed", "result": "@"}
    body = {"id": "resp_1", "object": "response", "status": "completed", "output": [item]}
    before, after = json.dumps(body).split("@")
    return HugeImage(before, after)


def chat(streamed: bool) -> HugeImage:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,@"}}
    if streamed:
        choice = {"index": 0, "delta": {"images": [image]}, "finish_reason": None}
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                 "choices": [choice]}  # fmt: skip
        before, after = f"data: {json.dumps(chunk)}".split("@")
        return HugeImage(before, after + "\n\n")
    message = {"role": "assistant", "content": None, "images": [image]}
    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip
    before, after = json.dumps(body).split("@")
    return HugeImage(before, after)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "unstreamed"])
@pytest.mark.parametrize("protocol", ["responses", "chat"])
def test_a_100_mb_image_is_refused_at_the_bound(
    protocol: str, streamed: bool, client: httpx.Client
) -> None:
    huge = (responses if protocol == "responses" else chat)(streamed)
    with serving(huge.handler(streamed=streamed)) as server:
        maker = OpenAIResponsesAdapter if protocol == "responses" else OpenAIChatAdapter
        adapter: RuntimeAdapter = maker(
            base_url=server.base_url, model="m", api_key="sk-test", http_client=client
        )
        if streamed:
            outcome = run_streamed(adapter, make_request())
            error = outcome.error
            assert [event.kind for event in outcome.events] == ["Failed"]
        else:
            with pytest.raises(PortError) as raised:
                adapter.execute(make_request())
            error = raised.value
        assert server.wait_closed()
    assert isinstance(error, PortError)
    assert error.code == ErrorCode.RUNTIME_RESPONSE_TOO_LARGE
    # what the socket buffers took past the bound is all that was sent: not the 100 MB
    assert huge.sent < DEFAULT_MAX_RESPONSE_BYTES + 16 * len(PIECE)
