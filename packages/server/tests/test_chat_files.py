"""Files in chat messages: the AI SDK's file parts and AG-UI's image and document parts bound
to a contract's part inputs — the binding rule, each refusal's code and what it names, the
history turns that keep earlier images, the fingerprint that covers the bytes, and the JSON an
OpenAI-compatible upstream receives from ``runport serve``."""

from __future__ import annotations

import base64
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from runport.contracts import MAX_PART_BYTES, ExecutionRequest, FilePart, ImagePart, TextPart
from runport.core import Contract, parse_contract
from runport.mock import AsyncEmitter, AsyncFunctionRuntime
from runport.server import create_app, serve_in_background
from runport.server._errors import RequestRefused
from runport.server._frontends.agui._request import parse_agui
from runport.server._frontends.ui_message_stream._request import parse_chat

from .frontend_serve import PacedOpenAI, runport_serve
from .sse_frames import strip_ids

KEY = b"one deployment's key"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(32))
JPEG = b"\xff\xd8\xff\xe0" + bytes(28)
PDF = b"%PDF-1.7\n" + b"1 0 obj <<>> endobj\n%%EOF\n"


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def data_url(media_type: str, raw: bytes) -> str:
    return f"data:{media_type};base64,{b64(raw)}"


def photo_contract(**extensions: Any) -> Contract:
    """A question about a photo and, optionally, a document: both optional, so a message
    without a file renders as its text alone."""
    return parse_contract(
        {
            "api_version": "runport/v1alpha1",
            "id": "demo.photo",
            "version": "1.0.0",
            "inputs": {
                "question": {"schema": {"type": "string", "minLength": 1}, "required": True},
                "photo": {"kind": "image"},
                "report": {"kind": "file"},
                "tone": {"schema": {"type": "string"}},
            },
            "capabilities": ["text"],
            "messages": [
                {"role": "system", "content": "Answer about what you are shown."},
                {
                    "role": "user",
                    "content": "{{ inputs.question }}{{ inputs.photo }}{{ inputs.report }}",
                },
            ],
            "output_schema": {"type": "string"},
            "extensions": {"runport.chat": extensions} if extensions else {},
        }
    )


TEXT_ONLY = parse_contract(
    {
        "api_version": "runport/v1alpha1",
        "id": "demo.plain",
        "version": "1.0.0",
        "inputs": {"question": {"schema": {"type": "string"}, "required": True}},
        "messages": [{"role": "user", "content": "{{ inputs.question }}"}],
        "output_schema": {"type": "string"},
    }
)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def file(media_type: str, url: str, **more: Any) -> dict[str, Any]:
    return {"type": "file", "mediaType": media_type, "url": url, **more}


def user(*parts: dict[str, Any], message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": list(parts)}


def answer(words: str, message_id: str = "a1") -> dict[str, Any]:
    return {"id": message_id, "role": "assistant", "parts": [text(words)]}


def body(*messages: dict[str, Any], **more: Any) -> bytes:
    return json.dumps(
        {"id": "chat-1", "messages": list(messages), "trigger": "submit-message", **more}
    ).encode()


def refused(contract: Contract, raw: bytes) -> RequestRefused:
    with pytest.raises(RequestRefused) as caught:
        parse_chat(raw, contract, KEY)
    return caught.value


# ---- the binding rule ------------------------------------------------------------------------


def test_the_last_user_message_s_image_binds_to_the_contract_s_image_input() -> None:
    call = parse_chat(
        body(user(file("image/png", data_url("image/png", PNG)), text("What is it?"))),
        photo_contract(),
        KEY,
    )
    assert call.inputs == {
        "question": "What is it?",
        "photo": ImagePart(media_type="image/png", data=b64(PNG)),
    }
    assert call.history == []


def test_the_n_th_file_fills_the_n_th_part_input_in_declaration_order() -> None:
    parts = (
        text("Compare"),
        file("image/jpeg", data_url("image/jpeg", JPEG), filename="shot.jpg"),
        file("application/pdf", data_url("application/pdf", PDF), filename="report.pdf"),
    )
    call = parse_chat(body(user(*parts)), photo_contract(), KEY)
    assert call.inputs["photo"] == ImagePart(media_type="image/jpeg", data=b64(JPEG))
    assert call.inputs["report"] == FilePart(
        media_type="application/pdf", data=b64(PDF), filename="report.pdf"
    )


def test_the_chat_extension_s_files_choose_the_inputs_and_their_order() -> None:
    contract = photo_contract(files=["report", "photo"])
    parts = (
        text("Both"),
        file("application/pdf", data_url("application/pdf", PDF)),
        file("image/png", data_url("image/png", PNG)),
    )
    call = parse_chat(body(user(*parts)), contract, KEY)
    assert isinstance(call.inputs["report"], FilePart)
    assert isinstance(call.inputs["photo"], ImagePart)


def test_an_image_sent_to_a_file_input_goes_as_a_file_of_its_media_type() -> None:
    contract = photo_contract(files=["report"])
    call = parse_chat(
        body(
            user(text("Read it"), file("image/png", data_url("image/png", PNG), filename="a.png"))
        ),
        contract,
        KEY,
    )
    assert call.inputs["report"] == FilePart(
        media_type="image/png", data=b64(PNG), filename="a.png"
    )
    assert "photo" not in call.inputs


def test_an_https_file_part_is_a_url_part_runport_does_not_fetch() -> None:
    url = "https://images.example/cat.webp"
    call = parse_chat(body(user(text("And this?"), file("image/webp", url))), photo_contract(), KEY)
    assert call.inputs["photo"] == ImagePart(media_type="image/webp", url=url)


def test_an_earlier_message_s_image_goes_back_in_its_own_history_turn() -> None:
    first = user(text("What is it?"), file("image/png", data_url("image/png", PNG)))
    second = user(text("And the colour?"), message_id="u2")
    call = parse_chat(body(first, answer("A lighthouse."), second), photo_contract(), KEY)
    assert call.inputs == {"question": "And the colour?"}  # this message carries no file
    earlier, reply = call.history
    assert earlier.role == "user"
    assert earlier.content == [
        TextPart(text="What is it?"),
        ImagePart(media_type="image/png", data=b64(PNG)),
    ]
    assert (reply.role, reply.content) == ("assistant", "A lighthouse.")


def test_other_inputs_still_come_in_the_body() -> None:
    call = parse_chat(
        body(
            user(text("Hi"), file("image/png", data_url("image/png", PNG))), inputs={"tone": "dry"}
        ),
        photo_contract(),
        KEY,
    )
    assert call.inputs["tone"] == "dry"
    assert set(call.inputs) == {"question", "photo", "tone"}


# ---- every refusal, coded, naming the message, the part and the input -------------------------

PHOTO = file("image/png", data_url("image/png", PNG))
BIG = "A" * (4 * (MAX_PART_BYTES // 3 + 2))
BAD_FILES: list[tuple[str, Contract, bytes, int, str, tuple[str, ...]]] = [
    (
        "a contract without part inputs",
        TEXT_ONLY,
        body(user(text("x"), PHOTO)),
        400,
        "TQX_DATA_INVALID",
        ("message 0, part 1", "demo.plain", "no input of kind image or file"),
    ),
    (
        "more files than inputs",
        photo_contract(),
        body(user(PHOTO, file("application/pdf", data_url("application/pdf", PDF)), PHOTO)),
        400,
        "TQX_DATA_INVALID",
        ("message 0 carries 3 files", "at most 2", "photo, report"),
    ),
    (
        "a document sent to an image input",
        photo_contract(),
        body(user(text("x"), file("application/pdf", data_url("application/pdf", PDF)))),
        400,
        "TQX_VALUE_SCHEMA",
        ("message 0, part 1", "'photo'", "takes an image", "application/pdf"),
    ),
    (
        "bad base64",
        photo_contract(),
        body(user(file("image/png", "data:image/png;base64,iVBORw0KGgo%%%"))),
        400,
        "TQX_VALUE_SCHEMA",
        ("message 0, part 0", "'photo'", "not valid base64"),
    ),
    (
        "bytes that are not their media type's",
        photo_contract(),
        body(user(file("image/png", data_url("image/png", JPEG)))),
        400,
        "TQX_VALUE_SCHEMA",
        ("message 0, part 0", "'photo'", "image/png but data holds the bytes of image/jpeg"),
    ),
    (
        "a media type the data URL contradicts",
        photo_contract(),
        body(user(file("image/gif", data_url("image/png", PNG)))),
        400,
        "TQX_VALUE_SCHEMA",
        ("message 0, part 0", "differs from the data URL"),
    ),
    (
        "an http URL",
        photo_contract(),
        body(user(file("image/png", "http://images.example/cat.png"))),
        400,
        "TQX_VALUE_SCHEMA",
        ("message 0, part 0", "'photo'", "must be https or data, not 'http'"),
    ),
    (
        "a blob URL",
        photo_contract(),
        body(user(file("image/png", "blob:https://app.example/1f2e"))),
        400,
        "TQX_VALUE_SCHEMA",
        ("message 0, part 0", "not 'blob'"),
    ),
    (
        "a file name with a slash",
        photo_contract(files=["report"]),
        body(user(file("application/pdf", data_url("application/pdf", PDF), filename="a/b.pdf"))),
        400,
        "TQX_VALUE_SCHEMA",
        ("message 0, part 0", "'report'", "filename"),
    ),
    (
        "a part past MAX_PART_BYTES",
        photo_contract(),
        body(user(file("image/png", f"data:image/png;base64,{BIG}"))),
        413,
        "TQX_REQUEST_TOO_LARGE",
        ("message 0, part 0", "'photo'", str(MAX_PART_BYTES)),
    ),
    (
        "a file part with a field the AI SDK does not send",
        photo_contract(),
        body(user({**PHOTO, "bytes": "x"})),
        400,
        "TQX_DATA_INVALID",
        ("message 0, part 0", "unknown field(s): bytes"),
    ),
    (
        "a file part without a url",
        photo_contract(),
        body(user({"type": "file", "mediaType": "image/png"})),
        400,
        "TQX_DATA_INVALID",
        ("'url'",),
    ),
    (
        "inputs that give a file input the chat fills",
        photo_contract(),
        body(user(text("x")), inputs={"photo": data_url("image/png", PNG)}),
        400,
        "TQX_DATA_INVALID",
        ("'inputs' must not give 'photo'",),
    ),
    (
        "a malformed file in an assistant message (a file the model made is shown, not sent)",
        photo_contract(),
        body(
            user(text("x")),
            {"id": "a", "role": "assistant", "parts": [{**PHOTO, "bytes": "x"}]},
            user(text("y")),
        ),
        400,
        "TQX_DATA_INVALID",
        ("message 1", "unknown field(s): bytes"),
    ),
    (
        "a bad file in an earlier message",
        photo_contract(),
        body(
            user(text("x"), file("text/plain", "data:text/plain,hi")), answer("ok"), user(text("y"))
        ),
        400,
        "TQX_VALUE_SCHEMA",
        ("message 0, part 1", "'photo'", "text/plain"),
    ),
    (
        "an extension naming an input without a kind",
        photo_contract(files=["tone"]),
        body(user(text("x"))),
        400,
        "TQX_CONTRACT_INVALID",
        ("runport.chat.files", "'tone'"),
    ),
]


@pytest.mark.parametrize(
    ("case", "contract", "raw", "status", "code", "named"),
    BAD_FILES,
    ids=[case[0] for case in BAD_FILES],
)
def test_a_bad_file_is_a_coded_refusal_naming_where_it_is(
    case: str,
    contract: Contract,
    raw: bytes,
    status: int,
    code: str,
    named: tuple[str, ...],
) -> None:
    error = refused(contract, raw)
    assert (error.status, str(error.code)) == (status, code)
    for words in named:
        assert words in error.message, error.message


def test_the_conversation_s_files_count_together_against_max_part_bytes() -> None:
    half = b"\x89PNG\r\n\x1a\n" + bytes(MAX_PART_BYTES // 2 + 1)
    big = file("image/png", data_url("image/png", half))
    each = parse_chat(body(user(text("one"), big)), photo_contract(), KEY)
    assert isinstance(each.inputs["photo"], ImagePart)  # one alone fits
    error = refused(
        photo_contract(),
        body(user(text("one"), big), answer("ok"), user(text("two"), big, message_id="u2")),
    )
    assert (error.status, str(error.code)) == (413, "TQX_REQUEST_TOO_LARGE")
    assert "message 2, part 1 (input 'photo')" in error.message


# ---- AG-UI: the same rule, from its image and document parts ---------------------------------


def agui(*messages: dict[str, Any], **props: Any) -> bytes:
    return json.dumps(
        {
            "threadId": "thread-1",
            "runId": "run-1",
            "messages": list(messages),
            "forwardedProps": props,
        }
    ).encode()


def agui_user(*content: dict[str, Any], message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": list(content)}


def image_part(source: dict[str, Any]) -> dict[str, Any]:
    return {"type": "image", "source": source}


def test_ag_ui_image_and_document_parts_bind_by_the_same_rule() -> None:
    url = "https://docs.example/report.pdf"
    message = agui_user(
        text("Compare"),
        image_part({"type": "data", "value": b64(PNG), "mimeType": "image/png"}),
        {
            "type": "document",
            "source": {"type": "url", "value": url, "mimeType": "application/pdf"},
        },
    )
    call, _, _ = parse_agui(agui(message), photo_contract())
    assert call.inputs == {
        "question": "Compare",
        "photo": ImagePart(media_type="image/png", data=b64(PNG)),
        "report": FilePart(media_type="application/pdf", url=url),
    }


def test_an_ag_ui_thread_s_earlier_image_is_in_its_own_history_turn() -> None:
    first = agui_user(
        text("What is it?"),
        image_part({"type": "data", "value": b64(JPEG), "mimeType": "image/jpeg"}),
    )
    reply = {"id": "a1", "role": "assistant", "content": "A lighthouse."}
    call, _, _ = parse_agui(
        agui(first, reply, {"id": "u2", "role": "user", "content": "Colour?"}), photo_contract()
    )
    assert call.inputs == {"question": "Colour?"}
    assert call.history[0].content == [
        TextPart(text="What is it?"),
        ImagePart(media_type="image/jpeg", data=b64(JPEG)),
    ]


BAD_AGUI_FILES: list[tuple[str, bytes, str, tuple[str, ...]]] = [
    (
        "an audio part",
        agui(
            agui_user(
                {
                    "type": "audio",
                    "source": {"type": "data", "value": "AA==", "mimeType": "audio/wav"},
                }
            )
        ),
        "TQX_DATA_INVALID",
        ("message 0, part 0", "'audio' parts are not taken"),
    ),
    (
        "a provider's file handle",
        agui(agui_user(image_part({"type": "file", "value": "file-abc", "provider": "openai"}))),
        "TQX_DATA_INVALID",
        ("message 0, part 0", "type 'file' is not taken"),
    ),
    (
        "a URL without its media type",
        agui(agui_user(image_part({"type": "url", "value": "https://images.example/a"}))),
        "TQX_VALUE_SCHEMA",
        ("message 0, part 0", "'photo'", "needs its media type"),
    ),
    (
        "bytes of another type",
        agui(agui_user(image_part({"type": "data", "value": b64(PDF), "mimeType": "image/png"}))),
        "TQX_VALUE_SCHEMA",
        ("message 0, part 0", "bytes of application/pdf"),
    ),
    (
        "a document sent to the image input",
        agui(
            agui_user(
                {
                    "type": "document",
                    "source": {"type": "data", "value": b64(PDF), "mimeType": "application/pdf"},
                }
            )
        ),
        "TQX_VALUE_SCHEMA",
        ("'photo'", "takes an image"),
    ),
    (
        "an image in a tool result",
        agui(
            {
                "id": "a",
                "role": "assistant",
                "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {
                "id": "t",
                "role": "tool",
                "toolCallId": "c1",
                "content": [
                    image_part({"type": "data", "value": b64(PNG), "mimeType": "image/png"})
                ],
            },
            agui_user(text("y")),
        ),
        "TQX_DATA_INVALID",
        ("message 1, part 0", "tool result"),
    ),
    (
        "forwarded inputs that give the photo",
        agui(agui_user(text("x")), inputs={"photo": data_url("image/png", PNG)}),
        "TQX_DATA_INVALID",
        ("'forwardedProps.inputs' must not give 'photo'",),
    ),
]


@pytest.mark.parametrize(
    ("case", "raw", "code", "named"), BAD_AGUI_FILES, ids=[case[0] for case in BAD_AGUI_FILES]
)
def test_a_bad_ag_ui_file_is_a_coded_400_naming_where_it_is(
    case: str, raw: bytes, code: str, named: tuple[str, ...]
) -> None:
    with pytest.raises(RequestRefused) as caught:
        parse_agui(raw, photo_contract())
    assert (caught.value.status, str(caught.value.code)) == (400, code)
    for words in named:
        assert words in caught.value.message, caught.value.message


# ---- over HTTP: nothing runs for a refusal; the fingerprint covers the bytes ------------------


async def lighthouse(request: ExecutionRequest, emit: AsyncEmitter) -> None:
    await emit.text("A lighthouse.")
    await emit.finish("stop")


CHAT = "/v1/contracts/demo.photo/chat"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[httpx.Client, list[int]]]:
    built: list[int] = []

    def counting() -> AsyncFunctionRuntime:
        built.append(1)
        return AsyncFunctionRuntime(lighthouse)

    app = create_app([photo_contract()], counting)
    with serve_in_background(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http, built


def receipt_of(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    for block in strip_ids(response.text).split("\n\n"):
        if '"data-runport-receipt"' in block:
            chunk: dict[str, Any] = json.loads(block.removeprefix("data: "))
            return dict(chunk["data"])
    raise AssertionError(f"no receipt in {response.text!r}")


def test_a_refused_file_builds_no_adapter_and_answers_in_both_error_shapes(
    served: tuple[httpx.Client, list[int]],
) -> None:
    http, built = served
    before = len(built)
    bad = user(text("x"), file("image/png", data_url("image/png", JPEG)))
    response = http.post(CHAT, content=body(bad), headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    refusal = response.json()
    assert refusal["error"]["code"] == "TQX_VALUE_SCHEMA"
    assert refusal["errorText"].startswith("TQX_VALUE_SCHEMA: message 0, part 1 (input 'photo'")
    ag = http.post(
        "/v1/contracts/demo.photo/agui",
        content=agui(
            agui_user(image_part({"type": "data", "value": b64(JPEG), "mimeType": "image/png"}))
        ),
        headers={"Content-Type": "application/json"},
    )
    assert ag.status_code == 400
    assert ag.json()["type"] == "RUN_ERROR"
    assert ag.json()["code"] == "TQX_VALUE_SCHEMA"
    assert len(built) == before


def test_one_changed_byte_of_the_image_changes_the_request_fingerprint(
    served: tuple[httpx.Client, list[int]],
) -> None:
    http, _ = served
    edited = PNG[:-1] + bytes([PNG[-1] ^ 1])

    def fingerprint_of(raw: bytes, chat_id: str) -> str:
        message = user(text("What is it?"), file("image/png", data_url("image/png", raw)))
        content = json.dumps({"id": chat_id, "messages": [message], "trigger": "submit-message"})
        response = http.post(CHAT, content=content, headers={"Content-Type": "application/json"})
        return str(receipt_of(response)["request_fingerprint"])

    same = fingerprint_of(PNG, "c1")
    assert fingerprint_of(PNG, "c2") == same  # the fingerprint is the request's, not the chat's
    assert fingerprint_of(edited, "c3") != same


# ---- end to end: runport serve, an OpenAI-compatible upstream on loopback ---------------------

PHOTO_YAML = """\
api_version: runport/v1alpha1
id: demo.photo
version: 1.0.0
inputs:
  question: {schema: {type: string, minLength: 1}, required: true}
  photo: {kind: image}
capabilities: [text]
messages:
  - role: user
    content: "{{ inputs.question }}{{ inputs.photo }}"
output_schema: {type: string}
extensions:
  runport.chat: {input: question, files: [photo]}
"""


def test_a_chat_s_pngs_reach_the_upstream_as_image_urls_each_in_its_own_user_turn(
    tmp_path: Path,
) -> None:
    for needed in ("runport.cli", "runport.openai"):
        if importlib.util.find_spec(needed) is None:
            pytest.skip(
                f"needs {needed} (runport serve --adapter openai): it runs in the frontend "
                "tox env, `tox run -e frontend`, which installs both"
            )
    (tmp_path / "photo.yaml").write_text(PHOTO_YAML, encoding="utf-8")
    upstream = PacedOpenAI()
    upstream.release()  # answer every call at once
    first = user(
        text("What is it?"), file("image/png", data_url("image/png", PNG), filename="p.png")
    )
    later = PNG + bytes(3 * 1024 * 1024 // 2)  # past the default 1 MiB body bound as base64
    with (
        upstream.serve() as base_url,
        runport_serve(
            "--contracts",
            tmp_path,
            "--adapter",
            "openai",
            "--max-body-bytes",
            str(8 * 1024 * 1024),
            env={"RUNPORT_OPENAI_BASE_URL": base_url, "RUNPORT_OPENAI_MODEL": "paced"},
        ) as server,
        httpx.Client(base_url=server, timeout=60) as http,
    ):
        one = http.post(CHAT, content=body(first), headers={"Content-Type": "application/json"})
        assert one.status_code == 200, one.text
        assert '"finishReason":"stop"' in one.text
        conversation = body(
            first,
            answer("The keeper waited."),
            user(
                text("And this one?"),
                file("image/png", data_url("image/png", later)),
                message_id="u2",
            ),
        )
        two = http.post(CHAT, content=conversation, headers={"Content-Type": "application/json"})
        assert two.status_code == 200, two.text
    sent = upstream.requests[0]["messages"]
    assert sent == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is it?"},
                {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}},
            ],
        }
    ]
    turns = upstream.requests[1]["messages"]
    assert [turn["role"] for turn in turns] == ["user", "assistant", "user"]
    assert turns[0] == sent[0]  # the earlier image, back in its own turn
    assert turns[1]["content"] == "The keeper waited."
    assert turns[2]["content"] == [
        {"type": "text", "text": "And this one?"},
        {"type": "image_url", "image_url": {"url": data_url("image/png", later)}},
    ]
