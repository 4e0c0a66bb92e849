"""Images and files through the Messages API: the blocks the upstream receives, and the parts
it cannot take refused before anything is sent."""

from __future__ import annotations

import httpx
import pytest

from runport.anthropic import AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter
from runport.conformance.loopback import json_reply, seen, serving, stream_reply
from runport.conformance.providers import (
    PDF,
    PHOTO,
    PHOTO_URL,
    PNG,
    REPORT,
    Provider,
    b64,
    make_request,
    parts_request,
    run_streamed,
)
from runport.contracts import ErrorCode, ImagePart, Message, TextPart
from runport.ports import PortError

from .anthropic_wire import Text, Turn, message_body, stream_events

PROVIDER = Provider(AnthropicMessagesAdapter, AsyncAnthropicMessagesAdapter, "claude-test", "k")
ANSWER = Turn([Text(["A cat."])])


def test_an_image_and_a_pdf_go_as_image_and_document_blocks(client: httpx.Client) -> None:
    request = parts_request(PHOTO, REPORT)
    with serving(stream_reply(stream_events(ANSWER)), json_reply(message_body(ANSWER))) as server:
        adapter = PROVIDER.adapter_for(server, client)
        assert run_streamed(adapter, request).text == "A cat."
        assert adapter.execute(request).text == "A cat."
        streamed, whole = seen(server, 0).body, seen(server, 1).body
    assert streamed["system"] == "Be brief."
    assert (
        streamed["messages"]
        == whole["messages"]
        == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)},
                    },
                    {
                        "type": "document",
                        "source": {
                            "type": "base64",
                            "media_type": "application/pdf",
                            "data": b64(PDF),
                        },
                        "title": "report.pdf",
                    },
                    {"type": "text", "text": "Answer in one line."},
                ],
            }
        ]
    )


def test_an_image_by_url_and_a_text_file_as_its_text(client: httpx.Client) -> None:
    notes = {"media_type": "text/plain", "data": b64(b"Nine lives.\n")}
    with serving(json_reply(message_body(ANSWER))) as server:
        PROVIDER.adapter_for(server, client).execute(parts_request(PHOTO_URL, notes))
        content = seen(server).body["messages"][0]["content"]
    assert content[1] == {
        "type": "image",
        "source": {"type": "url", "url": "https://images.example/cat.png"},
    }
    assert content[2] == {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "Nine lives.\n"},
    }


@pytest.mark.parametrize(
    ("message", "code"),
    [
        # an image past the API's 5 MB of base64
        (
            Message(
                role="user",
                content=[ImagePart(media_type="image/png", data=b64(PNG + bytes(4 * 1024 * 1024)))],
            ),
            ErrorCode.REQUEST_TOO_LARGE,
        ),
        # a media type the API does not read
        (
            Message(role="user", content=[ImagePart(media_type="image/heic", data=b64(b"x"))]),
            ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED,
        ),
        # an image in an assistant turn
        (
            Message(role="assistant", content=[TextPart(text="see"), ImagePart(**PHOTO)]),
            ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED,
        ),
    ],
)
def test_a_part_the_api_cannot_take_is_refused_before_sending(
    client: httpx.Client, message: Message, code: ErrorCode
) -> None:
    with serving(json_reply(message_body(ANSWER))) as server:
        with pytest.raises(PortError) as refused:
            PROVIDER.adapter_for(server, client).execute(make_request(messages=[message]))
        assert server.requests == []
    assert refused.value.code == code
