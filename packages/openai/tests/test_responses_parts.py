"""Images and files through the Responses API: ``input_image`` and ``input_file`` content as
the upstream receives it, and the parts it cannot take refused before anything is sent."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from runport.conformance.loopback import json_reply, seen, serving, stream_reply
from runport.conformance.providers import (
    PDF,
    PHOTO,
    PHOTO_URL,
    PNG,
    REPORT,
    b64,
    make_request,
    parts_request,
    run_streamed,
)
from runport.contracts import ErrorCode, FilePart, ImagePart, Message, TextPart
from runport.openai import OpenAIResponsesAdapter
from runport.ports import PortError

from .responses_wire import Message as Said
from .responses_wire import Turn, response_body, stream_events

ANSWER = Turn([Said(("A cat.",))])


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as http:
        yield http


def adapter(base_url: str, client: httpx.Client) -> OpenAIResponsesAdapter:
    return OpenAIResponsesAdapter(
        base_url=base_url, model="gpt-test", api_key="k", http_client=client
    )


def test_an_image_and_a_pdf_go_as_input_image_and_input_file(client: httpx.Client) -> None:
    request = parts_request(PHOTO, REPORT)
    with serving(stream_reply(stream_events(ANSWER)), json_reply(response_body(ANSWER))) as server:
        responses = adapter(server.base_url, client)
        assert run_streamed(responses, request).text == "A cat."
        assert responses.execute(request).text == "A cat."
        streamed, whole = seen(server, 0).body, seen(server, 1).body
    assert streamed["instructions"] == "Be brief."
    assert (
        streamed["input"]
        == whole["input"]
        == [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is in this picture?"},
                    {
                        "type": "input_image",
                        "image_url": f"data:image/png;base64,{b64(PNG)}",
                        "detail": "auto",
                    },
                    {
                        "type": "input_file",
                        "file_data": f"data:application/pdf;base64,{b64(PDF)}",
                        "filename": "report.pdf",
                    },
                    {"type": "input_text", "text": "Answer in one line."},
                ],
            }
        ]
    )


def test_urls_go_as_they_are(client: httpx.Client) -> None:
    report = {"media_type": "application/pdf", "url": "https://docs.example/r.pdf"}
    with serving(json_reply(response_body(ANSWER))) as server:
        adapter(server.base_url, client).execute(parts_request(PHOTO_URL, report))
        content = seen(server).body["input"][0]["content"]
    assert content[1:3] == [
        {"type": "input_image", "image_url": "https://images.example/cat.png", "detail": "auto"},
        {"type": "input_file", "file_url": "https://docs.example/r.pdf", "filename": "file.pdf"},
    ]


@pytest.mark.parametrize(
    "message",
    [
        Message(role="user", content=[ImagePart(media_type="image/heic", data=b64(b"x"))]),
        Message(role="user", content=[FilePart(media_type="application/zip", data="UEs=")]),
        Message(role="assistant", content=[TextPart(text="see"), ImagePart(**PHOTO)]),
    ],
)
def test_a_part_the_api_cannot_take_is_refused_before_sending(
    client: httpx.Client, message: Message
) -> None:
    with serving(json_reply(response_body(ANSWER))) as server:
        with pytest.raises(PortError) as refused:
            adapter(server.base_url, client).execute(make_request(messages=[message]))
        assert server.requests == []
    assert refused.value.code == ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED
