"""Message parts: what a part refuses when it is made, and how the fingerprint covers its bytes
through their SHA-256 without holding them."""

from __future__ import annotations

import base64
import binascii
import hashlib

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import (
    MAX_PART_BYTES,
    CompiledInteraction,
    FilePart,
    ImagePart,
    Message,
    TextPart,
    canonical_json,
    fingerprint,
)

SIGNED = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff\xe0",
    "image/gif": b"GIF89a",
    "image/webp": b"RIFF\x00\x00\x00\x00WEBP",
}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def interaction(*content: TextPart | ImagePart | FilePart) -> CompiledInteraction:
    return CompiledInteraction(
        compiler="t/0",
        contract_id="parts",
        contract_version="1.0.0",
        messages=[Message(role="user", content=list(content))],
        output_schema={"type": "string"},
    )


def test_string_content_is_encoded_as_before() -> None:
    message = Message(role="user", content="hi")
    assert canonical_json(message) == b'{"content":"hi","role":"user"}'


@given(st.binary(min_size=1, max_size=256), st.data())
@settings(max_examples=settings.default.max_examples // 2, deadline=None)
def test_one_byte_of_an_image_changes_the_fingerprint(tail: bytes, data: st.DataObject) -> None:
    image = SIGNED["image/png"] + tail
    at = data.draw(st.integers(min_value=len(SIGNED["image/png"]), max_value=len(image) - 1))
    changed = image[:at] + bytes([image[at] ^ 1]) + image[at + 1 :]
    one = interaction(TextPart(text="see"), ImagePart(media_type="image/png", data=b64(image)))
    two = interaction(TextPart(text="see"), ImagePart(media_type="image/png", data=b64(changed)))
    assert fingerprint(one) != fingerprint(two)


def test_the_fingerprint_input_holds_the_digest_not_the_image() -> None:
    image = SIGNED["image/png"] + b"pixels" * 50
    part = ImagePart(media_type="image/png", data=b64(image))
    encoded = canonical_json(interaction(part))
    digest = hashlib.sha256(image).hexdigest()
    assert b64(image).encode() not in encoded
    assert (
        b'{"kind":"image","media_type":"image/png","sha256":"' + digest.encode() + b'"}' in encoded
    )
    assert part.sha256 == digest
    assert part.size == len(image)
    # the model's own JSON keeps the bytes, so a part round-trips
    assert Message.model_validate_json(Message(role="user", content=[part]).model_dump_json()) == (
        Message(role="user", content=[part])
    )


def test_a_data_url_is_its_bytes() -> None:
    image = SIGNED["image/gif"] + b"x"
    part = ImagePart.model_validate({"url": f"data:image/gif;base64,{b64(image)}"})
    assert part == ImagePart(media_type="image/gif", data=b64(image))
    assert part.url is None


@pytest.mark.parametrize("media_type", sorted(SIGNED))
def test_each_signature_is_checked(media_type: str) -> None:
    ImagePart(media_type=media_type, data=b64(SIGNED[media_type] + b"rest"))
    other = next(name for name in SIGNED if name != media_type)
    with pytest.raises(pydantic.ValidationError, match=f"media_type is {media_type}"):
        ImagePart(media_type=media_type, data=b64(SIGNED[other] + b"rest"))
    with pytest.raises(pydantic.ValidationError, match="no known signature"):
        ImagePart(media_type=media_type, data=b64(b"plain text"))


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"media_type": "image/png", "data": "not base64!"}, "not valid base64"),
        ({"media_type": "image/png", "data": "iVBORw0KGgo"}, "not valid base64"),  # unpadded
        ({"media_type": "image/png", "url": "http://example.com/a.png"}, "https or data"),
        ({"media_type": "image/png", "url": "file:///etc/passwd"}, "https or data"),
        ({"media_type": "image/png", "url": "https://u:p@example.com/a.png"}, "credentials"),
        ({"media_type": "image/png"}, "exactly one of data"),
        ({"media_type": "application/pdf", "url": "https://example.com/a"}, "image/..."),
        ({"media_type": "png", "url": "https://example.com/a"}, "not a media type"),
    ],
)
def test_a_malformed_image_part_is_refused(fields: dict[str, str], reason: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=reason):
        ImagePart.model_validate(fields)


def test_a_part_past_the_bound_is_refused_as_too_large() -> None:
    data = b64(b"%PDF-" + bytes(MAX_PART_BYTES))
    with pytest.raises(pydantic.ValidationError) as refused:
        FilePart(media_type="application/pdf", data=data)
    assert refused.value.errors()[0]["type"] == "part_too_large"


def test_a_file_name_is_a_name() -> None:
    FilePart(media_type="text/plain", data=b64(b"notes"), filename="notes.txt")
    with pytest.raises(pydantic.ValidationError, match="a filename is a name"):
        FilePart(media_type="text/plain", data=b64(b"notes"), filename="../etc/passwd")


def test_content_is_a_string_or_a_non_empty_list_of_parts() -> None:
    with pytest.raises(pydantic.ValidationError):
        Message(role="user", content=[])
    parsed = Message.model_validate(
        {
            "role": "user",
            "content": [
                {"kind": "text", "text": "a"},
                {"kind": "file", "media_type": "text/csv", "url": "https://example.com/a.csv"},
            ],
        }
    )
    assert isinstance(parsed.content, list)
    assert isinstance(parsed.content[1], FilePart)


_CHUNK = 1 << 16  # how much base64 a part's check decodes at a time
_WHOLE = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 256).decode()[: 2 * _CHUNK]


@pytest.mark.parametrize(
    "data",
    [
        _WHOLE,  # two chunks exactly
        _WHOLE[:_CHUNK] + "=",  # excess padding alone in a chunk of its own
        _WHOLE[:_CHUNK] + "==",
        _WHOLE[:_CHUNK] + "QQ==",  # a last chunk that is padded
        _WHOLE[:_CHUNK] + "QQ",  # unpadded
        _WHOLE[: _CHUNK - 4] + "QQ==" + _WHOLE[:8],  # padding before a chunk's end
        _WHOLE[: _CHUNK - 2] + "==" + _WHOLE[:8],
        _WHOLE[:_CHUNK] + "=" + _WHOLE[:7],  # padding first in the second chunk
        _WHOLE[:_CHUNK] + " " + _WHOLE[:7],
        _WHOLE[:_CHUNK] + "Q",
        _WHOLE[:-1] + "é",
        _WHOLE + "A=",
    ],
)
def test_base64_checked_a_chunk_at_a_time_is_judged_as_the_whole_text(data: str) -> None:
    """A part's base64 is checked in pieces; the verdict, the digest and the size are those
    of the whole text decoded at once (strict), at and across the pieces' edges."""
    try:
        raw = binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        with pytest.raises(pydantic.ValidationError, match="not valid base64"):
            FilePart(media_type="application/octet-stream", data=data)
        return
    part = FilePart(media_type="application/octet-stream", data=data)
    assert (part.sha256, part.size) == (hashlib.sha256(raw).hexdigest(), len(raw))
    assert ImagePart(media_type="image/png", data=data).size == len(raw)
