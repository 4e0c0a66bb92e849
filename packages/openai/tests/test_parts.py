"""Images and files through chat completions: ``image_url`` and ``file`` parts as the upstream
receives them, and the parts it cannot take refused before anything is sent."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from runport.conformance.loopback import FaultServer, json_reply, seen, serving, stream_reply
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
from runport.openai import OpenAIChatAdapter
from runport.ports import PortError

from .openai_upstream import completion, finish_chunk, role_chunk, sse, text_chunk


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5.0) as http:
        yield http


def adapter(server: FaultServer, client: httpx.Client) -> OpenAIChatAdapter:
    return OpenAIChatAdapter(
        base_url=server.base_url, model="gpt-test", api_key="k", http_client=client
    )


def test_an_image_and_a_pdf_go_as_image_url_and_file(client: httpx.Client) -> None:
    request = parts_request(PHOTO, REPORT)
    streamed_reply = stream_reply([sse([role_chunk(), text_chunk("A cat."), finish_chunk()])])
    with serving(streamed_reply, json_reply(completion("A cat."))) as server:
        chat = adapter(server, client)
        assert run_streamed(chat, request).text == "A cat."
        assert chat.execute(request).text == "A cat."
        streamed, whole = seen(server, 0).body, seen(server, 1).body
    assert (
        streamed["messages"]
        == whole["messages"]
        == [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"},
                    },
                    {
                        "type": "file",
                        "file": {
                            "filename": "report.pdf",
                            "file_data": f"data:application/pdf;base64,{b64(PDF)}",
                        },
                    },
                    {"type": "text", "text": "Answer in one line."},
                ],
            },
        ]
    )


def test_an_image_url_goes_as_it_is(client: httpx.Client) -> None:
    with serving(json_reply(completion("A cat."))) as server:
        adapter(server, client).execute(parts_request(PHOTO_URL))
        content = seen(server).body["messages"][1]["content"]
    assert content[1] == {
        "type": "image_url",
        "image_url": {"url": "https://images.example/cat.png"},
    }
    assert json.dumps(content).count("image_url") == 2


@pytest.mark.parametrize(
    "message",
    [
        # the chat API takes a file by its bytes only
        Message(
            role="user",
            content=[FilePart(media_type="application/pdf", url="https://docs.example/a.pdf")],
        ),
        # an image type it does not read
        Message(role="user", content=[ImagePart(media_type="image/heic", data=b64(b"x"))]),
        # an image in a system turn
        Message(role="system", content=[TextPart(text="see"), ImagePart(**PHOTO)]),
    ],
)
def test_a_part_the_api_cannot_take_is_refused_before_sending(
    client: httpx.Client, message: Message
) -> None:
    with serving(json_reply(completion("A cat."))) as server:
        with pytest.raises(PortError) as refused:
            adapter(server, client).execute(make_request(messages=[message]))
        assert server.requests == []
    assert refused.value.code == ErrorCode.RUNTIME_CAPABILITY_UNSUPPORTED
