"""Images and files through Gemini: ``inlineData`` and ``fileData`` parts as the upstream
receives them, and the parts it cannot take refused before anything is sent."""

from __future__ import annotations

import httpx
import pytest

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
from runport.contracts import ErrorCode, FilePart, ImagePart, Message
from runport.gemini import AsyncGeminiAdapter, GeminiAdapter
from runport.ports import PortError

from .gemini_wire import Turn, response_body, stream_chunks, text

PROVIDER = Provider(GeminiAdapter, AsyncGeminiAdapter, "gemini-test", "k")
ANSWER = Turn([[text("A cat.")]])
GIF = b"GIF89a" + bytes(20)


def test_an_image_and_a_pdf_go_as_inline_data(client: httpx.Client) -> None:
    request = parts_request(PHOTO, REPORT)
    with serving(stream_reply(stream_chunks(ANSWER)), json_reply(response_body(ANSWER))) as server:
        adapter = PROVIDER.adapter_for(server, client)
        assert run_streamed(adapter, request).text == "A cat."
        assert adapter.execute(request).text == "A cat."
        streamed, whole = seen(server, 0).body, seen(server, 1).body
    assert streamed["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert (
        streamed["contents"]
        == whole["contents"]
        == [
            {
                "role": "user",
                "parts": [
                    {"text": "What is in this picture?"},
                    {"inlineData": {"mimeType": "image/png", "data": b64(PNG)}},
                    {"inlineData": {"mimeType": "application/pdf", "data": b64(PDF)}},
                    {"text": "Answer in one line."},
                ],
            }
        ]
    )


def test_a_url_goes_as_file_data(client: httpx.Client) -> None:
    with serving(json_reply(response_body(ANSWER))) as server:
        PROVIDER.adapter_for(server, client).execute(parts_request(PHOTO_URL))
        parts = seen(server).body["contents"][0]["parts"]
    assert parts == [
        {"text": "What is in this picture?"},
        {"fileData": {"mimeType": "image/png", "fileUri": "https://images.example/cat.png"}},
        {"text": "Answer in one line."},
    ]


@pytest.mark.parametrize(
    ("messages", "code"),
    [
        # Gemini reads no GIF
        (
            [Message(role="user", content=[ImagePart(media_type="image/gif", data=b64(GIF))])],
            ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED,
        ),
        # nor a zip file
        (
            [Message(role="user", content=[FilePart(media_type="application/zip", data="UEs=")])],
            ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED,
        ),
        # two parts past the 20 MB of inline data a request may carry
        (
            [
                Message(
                    role="user",
                    content=[ImagePart(media_type="image/png", data=b64(PNG + bytes(8_000_000)))],
                ),
                Message(
                    role="user",
                    content=[ImagePart(media_type="image/png", data=b64(PNG + bytes(8_000_000)))],
                ),
            ],
            ErrorCode.REQUEST_TOO_LARGE,
        ),
    ],
)
def test_a_part_gemini_cannot_take_is_refused_before_sending(
    client: httpx.Client, messages: list[Message], code: ErrorCode
) -> None:
    with serving(json_reply(response_body(ANSWER))) as server:
        with pytest.raises(PortError) as refused:
            PROVIDER.adapter_for(server, client).execute(make_request(messages=messages))
        assert server.requests == []
    assert refused.value.code == code
