"""Image and file values given by path: read by the command line, within its folder rules
(docs/cli.md, adr/0039-images-and-files-in-messages.md).

Only the values a contract declares with ``kind: image`` or ``kind: file`` are read, so no other
input's ``path`` key is ever taken for a file. A path resolves against the folder of the file
that names it (the current folder for ``-i``) and must stay inside the folder the command
allows; the bytes are read within ``MAX_PART_BYTES``. Core then checks them as any other part.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runport.cli._errors import CliError
from runport.contracts import MAX_PART_BYTES, ErrorCode, sniffed_media_type
from runport.core import Contract


def read_part_files(
    contract: Contract,
    values: dict[str, Any] | None,
    root: str,
    *,
    base: Path,
    inside: Path,
    inline: bool = False,
) -> None:
    """Replace, in ``values`` (the contract's ``root``: inputs or context), each image or file
    value given as ``{path, media_type?, filename?}`` (or ``"@path"`` when ``inline``) by the
    part value its bytes make."""
    if not values:
        return
    specs = contract.inputs if root == "inputs" else contract.context
    for name, spec in specs.items():
        value = values.get(name)
        if spec.kind is None or value is None:
            continue
        if inline and isinstance(value, str) and value.startswith("@"):
            value = {"path": value[1:]}
        if not (isinstance(value, Mapping) and isinstance(value.get("path"), str)):
            continue
        noun = "input" if root == "inputs" else "context value"
        values[name] = _read(f"{noun} {name!r}", spec.kind, dict(value), base, inside)


def _read(what: str, kind: str, value: dict[str, Any], base: Path, inside: Path) -> dict[str, Any]:
    named = value.pop("path")
    folder = inside.resolve()
    target = (base / named).resolve()
    if not target.is_relative_to(folder):
        raise CliError(ErrorCode.DATA_INVALID, f"{what}: path {named!r} resolves outside {folder}")
    if not target.is_file():
        raise CliError(ErrorCode.DATA_INVALID, f"{what}: {named!r} is not a file")
    with target.open("rb") as file:
        raw = file.read(MAX_PART_BYTES + 1)
    if len(raw) > MAX_PART_BYTES:
        raise CliError(
            ErrorCode.REQUEST_TOO_LARGE,
            f"{what}: {named!r} holds more than the {MAX_PART_BYTES} bytes a request's parts "
            "may hold",
        )
    media_type = value.get("media_type") or sniffed_media_type(raw)
    media_type = media_type or mimetypes.guess_type(target.name, strict=False)[0]
    if not media_type:
        raise CliError(
            ErrorCode.DATA_INVALID,
            f"{what}: cannot tell the media type of {named!r}; give it as media_type",
        )
    value["media_type"] = media_type
    value["data"] = base64.b64encode(raw).decode("ascii")
    if kind == "file":
        value.setdefault("filename", target.name)
    return value
