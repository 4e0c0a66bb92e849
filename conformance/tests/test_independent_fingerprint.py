"""The suite's own fingerprint of a request agrees with runport's, parts included: an image or
file carried as bytes counts as their SHA-256, so one byte changes it and no receipt holds it."""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st

from runport.conformance._cases import independent_fingerprint, independent_request_fingerprint
from runport.contracts import (
    CompiledInteraction,
    FilePart,
    ImagePart,
    Message,
    TextPart,
    fingerprint,
)

PNG = b"\x89PNG\r\n\x1a\n"


def interaction(image: bytes, document: bytes) -> CompiledInteraction:
    content = [
        TextPart(text="What is in this picture, and in the attached report?"),
        ImagePart(media_type="image/png", data=base64.b64encode(PNG + image).decode()),
        FilePart(
            media_type="application/pdf",
            data=base64.b64encode(b"%PDF-" + document).decode(),
            filename="report.pdf",
        ),
        ImagePart(media_type="image/png", url="https://images.example/cat.png"),
    ]
    return CompiledInteraction(
        compiler="runport.conformance/1",
        contract_id="see",
        contract_version="1.0.0",
        messages=[
            Message(role="system", content="Describe."),
            Message(role="user", content=content),
        ],
        output_schema={"type": "string"},
    )


@settings(max_examples=settings.default.max_examples // 2)
@given(image=st.binary(max_size=64), document=st.binary(max_size=64), flip=st.integers(0, 63))
def test_the_suite_s_request_fingerprint_is_runport_s_and_covers_every_byte(
    image: bytes, document: bytes, flip: int
) -> None:
    made = interaction(image, document)
    dumped = made.model_dump(mode="json")
    assert independent_request_fingerprint(dumped) == fingerprint(made)
    # the dump keeps the bytes; the fingerprint does not stand for the dump as it is
    assert independent_fingerprint(dumped) != fingerprint(made)
    if image:
        changed = bytearray(image)
        changed[flip % len(image)] ^= 1
        other = interaction(bytes(changed), document)
        assert independent_request_fingerprint(other.model_dump(mode="json")) != fingerprint(made)


def test_string_content_is_fingerprinted_as_before() -> None:
    made = CompiledInteraction(
        compiler="runport.conformance/1",
        contract_id="plain",
        contract_version="1.0.0",
        messages=[Message(role="user", content="Hello")],
        output_schema={"type": "string"},
    )
    dumped = made.model_dump(mode="json")
    assert independent_request_fingerprint(dumped) == independent_fingerprint(dumped)
    assert independent_request_fingerprint(dumped) == fingerprint(made)
