"""Values of kind image and file: declared, placed by image/file nodes (or a placeholder),
bound when compiling, and every bad value a coded diagnostic naming it."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from runport.contracts import (
    MAX_PART_BYTES,
    FilePart,
    ImagePart,
    TextPart,
    fingerprint,
)
from runport.core import ContractError, compile_contract, parse_contract
from runport.core._request_fingerprint import request_fingerprint

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(16))
PDF = b"%PDF-1.4\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def contract(**overrides: Any) -> Any:
    document: dict[str, Any] = {
        "api_version": "runport/v1alpha1",
        "id": "see",
        "version": "1.0.0",
        "inputs": {"photo": {"kind": "image"}, "doc": {"kind": "file"}},
        "messages": [
            {
                "role": "user",
                "content": [
                    "Look: ",
                    {"kind": "image", "source": {"kind": "ref", "path": "inputs.photo"}},
                    {"kind": "file", "source": {"kind": "ref", "path": "inputs.doc"}},
                    " thanks",
                ],
            }
        ],
        "output_schema": {"type": "string"},
    }
    document.update(overrides)
    return parse_contract(document)


def problems(error: pytest.ExceptionInfo[ContractError]) -> list[tuple[str, str | None]]:
    return [(d.code, d.json_pointer) for d in error.value.diagnostics]


def test_the_parts_sit_between_the_texts() -> None:
    photo = {"media_type": "image/png", "data": b64(PNG)}
    doc = {"media_type": "application/pdf", "data": b64(PDF), "filename": "a.pdf"}
    interaction = compile_contract(contract(), inputs={"photo": photo, "doc": doc})
    assert interaction.messages[0].content == [
        TextPart(text="Look: "),
        ImagePart(media_type="image/png", data=b64(PNG)),
        FilePart(media_type="application/pdf", data=b64(PDF), filename="a.pdf"),
        TextPart(text=" thanks"),
    ]
    assert request_fingerprint(interaction) == fingerprint(interaction)


def test_values_not_given_leave_the_string_the_same_contract_without_them_makes() -> None:
    without = parse_contract(
        {
            "api_version": "runport/v1alpha1",
            "id": "see",
            "version": "1.0.0",
            "messages": [{"role": "user", "content": "Look:  thanks"}],
            "output_schema": {"type": "string"},
        }
    )
    given_none = compile_contract(contract(), inputs={"photo": None})
    assert given_none.messages == compile_contract(without, inputs={}).messages
    assert given_none.messages[0].content == "Look:  thanks"


def test_a_placeholder_naming_an_image_stands_for_its_node() -> None:
    short = contract(messages=[{"role": "user", "content": "Look: {{ inputs.photo }} thanks"}])
    photo = {"url": f"data:image/png;base64,{b64(PNG)}"}
    assert compile_contract(short, inputs={"photo": photo}).messages == (
        compile_contract(contract(), inputs={"photo": photo}).messages
    )


def test_a_python_part_is_taken_as_it_is() -> None:
    part = ImagePart(media_type="image/png", url="https://images.example/a.png")
    content = compile_contract(contract(), inputs={"photo": part}).messages[0].content
    assert isinstance(content, list)
    assert content[1] is part


@pytest.mark.parametrize(
    ("photo", "expected"),
    [
        ({"media_type": "image/jpeg", "data": b64(PNG)}, [("TQX_VALUE_SCHEMA", "/inputs/photo")]),
        ({"media_type": "image/png", "data": "%%%"}, [("TQX_VALUE_SCHEMA", "/inputs/photo")]),
        (
            {"media_type": "image/png", "url": "ftp://example.com/a.png"},
            [("TQX_VALUE_SCHEMA", "/inputs/photo/url")],
        ),
        ("https://example.com/a.png", [("TQX_VALUE_SCHEMA", "/inputs/photo/media_type")]),
        (42, [("TQX_VALUE_SCHEMA", "/inputs/photo")]),
        (
            FilePart(media_type="application/pdf", data=b64(PDF)),
            [("TQX_VALUE_SCHEMA", "/inputs/photo")],
        ),
        (
            {"media_type": "image/png", "data": b64(PNG + bytes(MAX_PART_BYTES))},
            [("TQX_REQUEST_TOO_LARGE", "/inputs/photo")],
        ),
    ],
)
def test_a_bad_value_is_a_diagnostic_naming_it(photo: Any, expected: list[tuple[str, str]]) -> None:
    with pytest.raises(ContractError) as refused:
        compile_contract(contract(), inputs={"photo": photo})
    assert problems(refused) == expected
    assert "photo" in refused.value.diagnostics[0].message


def test_parts_past_the_bound_together_name_the_value_that_passes_it() -> None:
    half = MAX_PART_BYTES // 2 + 1
    photo = {"media_type": "image/png", "data": b64(PNG + bytes(half))}
    doc = {"media_type": "application/pdf", "data": b64(PDF + bytes(half))}
    with pytest.raises(ContractError) as refused:
        compile_contract(contract(), inputs={"photo": photo, "doc": doc})
    assert problems(refused) == [("TQX_REQUEST_TOO_LARGE", "/inputs/doc")]


def test_a_required_part_value_may_not_be_null() -> None:
    required = contract(
        inputs={"photo": {"kind": "image", "required": True}, "doc": {"kind": "file"}}
    )
    with pytest.raises(ContractError) as refused:
        compile_contract(required, inputs={"photo": None})
    assert problems(refused) == [("TQX_VALUE_REQUIRED", "/inputs/photo")]


@pytest.mark.parametrize(
    ("overrides", "pointer", "reason"),
    [
        (
            {
                "inputs": {
                    "photo": {"kind": "image", "schema": {"type": "string"}},
                    "doc": {"kind": "file"},
                }
            },
            "/inputs/photo",
            "runport's own schema",
        ),
        (
            {
                "inputs": {"photo": {"kind": "image"}},
                "messages": [{"role": "user", "content": "{{ inputs.photo | trim }}"}],
            },
            "/messages/0/content",
            "not text",
        ),
        (
            {
                "inputs": {"photo": {"kind": "file"}},
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"kind": "image", "source": {"kind": "ref", "path": "inputs.photo"}}
                        ],
                    }
                ],
            },
            "/messages/0/content/0/source/path",
            "of kind 'file'",
        ),
        (
            {
                "inputs": {"photo": {"kind": "image"}},
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "kind": "when",
                                "condition": {"kind": "ref", "path": "inputs.photo"},
                                "then": [
                                    {
                                        "kind": "image",
                                        "source": {"kind": "ref", "path": "inputs.photo"},
                                    }
                                ],
                            }
                        ],
                    }
                ],
            },
            "/messages/0/content/0/then/0",
            "directly in a message's content",
        ),
    ],
)
def test_a_misplaced_part_is_a_contract_error(
    overrides: dict[str, Any], pointer: str, reason: str
) -> None:
    with pytest.raises(ContractError) as refused:
        contract(**overrides)
    (problem,) = refused.value.diagnostics
    assert problem.code == "TQX_CONTRACT_INVALID"
    assert problem.json_pointer == pointer
    assert reason in problem.message


def test_a_kind_leaves_the_dump_of_every_other_value_unchanged() -> None:
    dumped = contract(
        inputs={"photo": {"kind": "image"}, "doc": {"kind": "file"}, "n": {"schema": {}}}
    ).model_dump(mode="json", by_alias=True)
    assert dumped["inputs"]["n"] == {"schema": {}, "required": False, "description": ""}
    assert dumped["inputs"]["photo"]["kind"] == "image"
    assert parse_contract(dumped) == contract(
        inputs={"photo": {"kind": "image"}, "doc": {"kind": "file"}, "n": {"schema": {}}}
    )
