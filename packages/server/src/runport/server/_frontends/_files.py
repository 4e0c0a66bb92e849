"""Files in chat messages: the images and documents a chat's user messages carry, bound to
the contract's part inputs (adr/0039-images-and-files-in-messages.md, "Files in chat
messages").

The contract decides where a file goes, as for any value: its ``runport.chat`` extension may
list the inputs a message's files fill (``files: [NAME, ...]``), else every input declared
with a ``kind`` fills, in declaration order. The n-th file of a user message fills the n-th of
those inputs. Both protocols read their parts into a ``SentFile`` and bind through
``FileInputs``, so the rule is written once; each refusal is a coded 400 (413 for size) that
names the message, the part and the input, before any adapter is built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from runport.contracts import MAX_PART_BYTES, PART_TOO_LARGE, ErrorCode, FilePart, ImagePart
from runport.core import Contract
from runport.server._errors import RequestRefused

CHAT_EXTENSION = "runport.chat"
"""The contract extension that names a contract's chat inputs: ``{input: NAME, files:
[NAME, ...]}``."""


@dataclass(frozen=True)
class SentFile:
    """One file a chat message carries, as its protocol gave it: a ``data:`` or ``https``
    ``url``, or base64 ``data``, with the media type the client declared."""

    where: str
    """The message and part, as refusals name them (``"message 2, part 0"``)."""
    media_type: str | None
    url: str | None = None
    data: str | None = None
    filename: str | None = None


def _contract_refused(contract: Contract, message: str) -> RequestRefused:
    return RequestRefused(400, ErrorCode.CONTRACT_INVALID, f"contract {contract.id!r}: {message}")


def file_slots(contract: Contract) -> tuple[tuple[str, str], ...]:
    """The inputs a chat message's files fill, in order, each with its kind: the
    ``runport.chat`` extension's ``files``, else every input declared with a kind."""
    extension = contract.extensions.get(CHAT_EXTENSION)
    named = extension.get("files") if isinstance(extension, dict) else None
    if named is None:
        return tuple((name, spec.kind) for name, spec in contract.inputs.items() if spec.kind)
    if not isinstance(named, list) or not all(isinstance(name, str) for name in named):
        raise _contract_refused(contract, f"{CHAT_EXTENSION}.files must be a list of input names")
    names = [name for name in named if isinstance(name, str)]
    slots: list[tuple[str, str]] = []
    for name in names:
        spec = contract.inputs.get(name)
        if spec is None or spec.kind is None:
            raise _contract_refused(
                contract,
                f"{CHAT_EXTENSION}.files names {name!r}, which is not an input declared with "
                "kind: image or kind: file",
            )
        if any(name == taken for taken, _ in slots):
            raise _contract_refused(contract, f"{CHAT_EXTENSION}.files names {name!r} twice")
        slots.append((name, spec.kind))
    return tuple(slots)


class FileInputs:
    """Binds each user message's files to the contract's part inputs, and counts the bytes
    of the whole conversation's files against ``MAX_PART_BYTES`` (the model receives them
    all in one request)."""

    def __init__(self, contract: Contract, given: Mapping[str, Any], inputs_field: str) -> None:
        self._contract = contract
        self.slots = file_slots(contract)
        self._total = 0
        for name, _ in self.slots:
            if name in given:
                raise RequestRefused(
                    400,
                    ErrorCode.DATA_INVALID,
                    f"{inputs_field!r} must not give {name!r}: the chat's messages fill it "
                    "with the files they carry",
                )

    def bind(self, files: Sequence[SentFile], where: str) -> dict[str, ImagePart | FilePart]:
        """The input values one user message's ``files`` give, by input name."""
        if not files:
            return {}
        if not self.slots:
            raise RequestRefused(
                400,
                ErrorCode.DATA_INVALID,
                f"{files[0].where}: contract {self._contract.id!r} takes no files in a chat "
                "(it declares no input of kind image or file)",
            )
        if len(files) > len(self.slots):
            names = ", ".join(name for name, _ in self.slots)
            raise RequestRefused(
                400,
                ErrorCode.DATA_INVALID,
                f"{where} carries {len(files)} files; contract {self._contract.id!r} takes at "
                f"most {len(self.slots)} in one message (its inputs {names}, in that order)",
            )
        bound: dict[str, ImagePart | FilePart] = {}
        for sent, (name, kind) in zip(files, self.slots, strict=False):
            part = self._part(sent, name, kind)
            self._total += part.size
            if self._total > MAX_PART_BYTES:
                raise RequestRefused(
                    413,
                    ErrorCode.REQUEST_TOO_LARGE,
                    f"{sent.where} (input {name!r}): the chat's files hold {self._total} bytes "
                    f"up to this one, more than the {MAX_PART_BYTES} one request's parts may hold",
                )
            bound[name] = part
        return bound

    def _part(self, sent: SentFile, name: str, kind: str) -> ImagePart | FilePart:
        what = f"{sent.where} (input {name!r}, of kind {kind})"
        media_type = sent.media_type
        if media_type is None and sent.url is not None and sent.url[:5].lower() == "data:":
            media_type = sent.url[5:].split(",", 1)[0].split(";", 1)[0] or None
        if media_type is None:
            raise _value_refused(f"{what}: the file needs its media type")
        if kind == "image" and not media_type.strip().lower().startswith("image/"):
            raise _value_refused(f"{what}: takes an image (image/...), not {media_type!r}")
        value: dict[str, Any] = {"media_type": media_type}
        if sent.url is not None:
            value["url"] = sent.url
        if sent.data is not None:
            value["data"] = sent.data
        try:
            if kind == "image":
                return ImagePart.model_validate(value)
            if sent.filename is not None:
                value["filename"] = sent.filename
            return FilePart.model_validate(value)
        except ValidationError as error:
            detail = error.errors()[0]
            message = str(detail["msg"]).removeprefix("Value error, ")
            if detail["type"] == PART_TOO_LARGE:
                too_large = ErrorCode.REQUEST_TOO_LARGE
                raise RequestRefused(413, too_large, f"{what}: {message}") from None
            field = [str(step) for step in detail["loc"]]
            at = f" ({field[-1]})" if field else ""
            raise _value_refused(f"{what}{at}: {message}") from None


def _value_refused(message: str) -> RequestRefused:
    return RequestRefused(400, ErrorCode.VALUE_SCHEMA, message)
