"""Values of kind ``image`` and ``file``: the schema a client fills them in by, and binding one to
the part it stands for (docs/contracts.md, adr/0039-images-and-files-in-messages.md).

A part value is the part without its ``kind``: ``{media_type, data}`` (base64), ``{media_type,
url}`` (https), a ``data:`` URL alone (as ``{url}`` or the bare string), and for a file an
optional ``filename``. Binding builds the ``runport.contracts`` part, whose own checks (base64,
signature, size, scheme) are the only ones: each refusal becomes a diagnostic naming the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import JsonValue, ValidationError

from runport.contracts import (
    MAX_PART_BYTES,
    PART_TOO_LARGE,
    Diagnostic,
    ErrorCode,
    FilePart,
    ImagePart,
)

PartKind = Literal["image", "file"]

MARKER = "x-runport-part"
"""The annotation a part value's schema carries (``image`` or ``file``), so a client (the
playground's form) knows to offer a file picker."""


def part_value_schema(kind: PartKind) -> dict[str, JsonValue]:
    """The JSON Schema of a value of this kind, for clients; binding is what checks a value."""
    media_type: dict[str, JsonValue] = {"type": "string"}
    if kind == "image":
        media_type["pattern"] = "^image/"
    properties: dict[str, JsonValue] = {
        "media_type": media_type,
        "data": {"type": "string", "contentEncoding": "base64"},
        "url": {"type": "string", "pattern": "^(https|data):"},
    }
    if kind == "file":
        properties["filename"] = {"type": "string", "minLength": 1}
    return {
        MARKER: kind,
        "type": "object",
        "properties": properties,
        "oneOf": [{"required": ["data"]}, {"required": ["url"]}],
        "additionalProperties": False,
    }


def bind_part(
    kind: PartKind, value: Any, pointer: str, what: str
) -> tuple[ImagePart | FilePart | None, list[Diagnostic]]:
    """The part ``value`` stands for, or the diagnostics (at ``pointer``) saying why not."""
    model = ImagePart if kind == "image" else FilePart
    if isinstance(value, ImagePart | FilePart):
        if value.kind == kind:
            return value, []
        return None, [
            _refused(pointer, f"{what} takes a part of kind {kind!r}, not {value.kind!r}")
        ]
    if isinstance(value, str):
        value = {"url": value}
    if not isinstance(value, Mapping):
        return None, [
            _refused(
                pointer,
                f"{what} is of kind {kind!r}: {{media_type, data}} (base64), {{media_type, url}} "
                f"(https) or a data URL, not {type(value).__name__}",
            )
        ]
    if value.get("kind", kind) != kind:
        return None, [_refused(pointer, f"{what} is of kind {kind!r}, not {value.get('kind')!r}")]
    try:
        return model.model_validate({**value, "kind": kind}), []
    except ValidationError as error:
        return None, [_diagnostic(detail, pointer, what) for detail in error.errors()]


def parts_too_large(pointer: str, total: int) -> Diagnostic:
    """The diagnostic of the value whose part takes the values' parts together past
    ``MAX_PART_BYTES``."""
    return Diagnostic(
        code=ErrorCode.REQUEST_TOO_LARGE,
        json_pointer=pointer,
        message=(
            f"the image and file values hold {total} bytes together, more than the "
            f"{MAX_PART_BYTES} one request's parts may hold (counted up to this one)"
        ),
    )


def _refused(pointer: str, message: str) -> Diagnostic:
    return Diagnostic(code=ErrorCode.VALUE_SCHEMA, json_pointer=pointer, message=message)


def _diagnostic(detail: Any, pointer: str, what: str) -> Diagnostic:
    message = str(detail["msg"]).removeprefix("Value error, ")
    field = [str(part) for part in detail["loc"] if part != "kind"]
    if detail["type"] == "extra_forbidden":
        message = f"unknown field {field[-1]!r}"
    elif detail["type"] == "missing":
        message = f"missing {field[-1]!r}"
    at = pointer + "".join(f"/{part}" for part in field)
    code = (
        ErrorCode.REQUEST_TOO_LARGE if detail["type"] == PART_TOO_LARGE else ErrorCode.VALUE_SCHEMA
    )
    return Diagnostic(code=code, json_pointer=at, message=f"{what}: {message}")
