"""Images and files in messages: ``TextPart``, ``ImagePart``, ``FilePart`` (docs/wire-types.md,
adr/0039-images-and-files-in-messages.md).

A part that exists is well-formed: its base64 decodes, its bytes fit ``MAX_PART_BYTES`` and
carry the signature its media type promises, its URL is ``https``. So every later reader — a
provider codec, the fingerprint, the mock — takes a part as it is, and bad input is refused
once, where it is made, with the reason. The bytes are decoded once, at validation, for those
checks and for the SHA-256 the fingerprint covers in their place.
"""

from __future__ import annotations

import binascii
import hashlib
import re
from typing import Annotated, Any, Final, Literal
from urllib.parse import unquote_to_bytes, urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from runport.contracts._limits import MAX_PART_BYTES

FINGERPRINT_CONTEXT: Final = {"runport": "fingerprint"}
"""The serialization context ``canonical_json`` dumps models with: a part's ``data`` is then
written as its ``sha256``, so no fingerprint input holds an image itself."""

PART_TOO_LARGE: Final = "part_too_large"
"""The pydantic error type of a part past ``MAX_PART_BYTES`` (the others are value errors), so
a caller can tell a size refusal (``TQX_REQUEST_TOO_LARGE``) from a malformed part."""

SIGNATURES: Final[dict[str, tuple[tuple[int, bytes], ...]]] = {
    "image/png": ((0, b"\x89PNG\r\n\x1a\n"),),
    "image/jpeg": ((0, b"\xff\xd8\xff"),),
    "image/gif": ((0, b"GIF8"),),
    "image/webp": ((0, b"RIFF"), (8, b"WEBP")),
    "application/pdf": ((0, b"%PDF-"),),
}
"""The media types whose bytes are checked, and the bytes each must hold at which offsets."""

_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")
_DATA_URL = re.compile(r"data:([^;,]*)(;base64)?,", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f/\\]")
# base64 of MAX_PART_BYTES bytes, padded: a longer text cannot decode within the bound
_MAX_BASE64 = 4 * -(-MAX_PART_BYTES // 3)


def _omitted() -> Any:
    return Field(default=None, exclude_if=lambda value: value is None)


def _none_if_false(value: Any) -> Any:
    return None if value is False else value


class _Breakpoint(BaseModel):
    """A prompt-cache breakpoint on one part (adr/0051-cache-tokens-and-cache-breakpoints.md):
    the provider may cache the request up to and including this part. Each part class
    declares ``cache`` and ``cache_ttl`` after its own fields, so a marked part's JSON still
    opens with its ``kind``; both are left out of the part's bytes when absent (``cache:
    false`` is none), so a part without one keeps its bytes and every fingerprint over it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    _no_cache = field_validator("cache", mode="before", check_fields=False)(_none_if_false)

    @model_validator(mode="after")
    def _ttl_needs_a_breakpoint(self) -> Any:
        if getattr(self, "cache_ttl", None) is not None and getattr(self, "cache", None) is None:
            raise ValueError("cache_ttl needs cache: true")
        return self


_CacheTTL = Literal["5m", "1h"]
"""How long a breakpoint's cache entry lives, where the provider lets a request say; only with
``cache``."""


def sniffed_media_type(data: bytes) -> str | None:
    """The media type whose signature ``data`` carries, among ``SIGNATURES``; else ``None``."""
    for media_type, marks in SIGNATURES.items():
        if all(data[at : at + len(mark)] == mark for at, mark in marks):
            return media_type
    return None


_CHUNK = 1 << 16
"""How much base64 ``_checked`` decodes at a time (a multiple of 4)."""


def _checked(data: str) -> tuple[bytes, str, int]:
    """``data`` checked as strict base64 within ``MAX_PART_BYTES``: the start of its bytes
    (enough for every signature), their SHA-256 (hex) and their size. It is decoded a chunk
    at a time, so a generated image of megabytes is never held decoded beside its base64
    (that copy was a third of the peak of a turn that streamed one). Strict base64 decoded in
    chunks of a multiple of 4 characters, each after the quad before it (whose 3 bytes are
    dropped), is the whole text decoded, provided no chunk but the last holds padding:
    padding anywhere else is refused, as the whole text's decoding refuses it."""
    if len(data) > _MAX_BASE64:
        raise _too_large(len(data) * 3 // 4)
    digest = hashlib.sha256()
    head = b""
    size = 0
    last = len(data) - _CHUNK
    try:
        for at in range(0, max(len(data), 1), _CHUNK):
            chunk = data[at : at + _CHUNK]
            if at < last and "=" in chunk:
                raise ValueError("padding before the end")
            if at:  # after the last quad before it, as the whole text's decoder reads it
                raw = binascii.a2b_base64(data[at - 4 : at] + chunk, strict_mode=True)[3:]
            else:
                raw = binascii.a2b_base64(chunk, strict_mode=True)
                head = raw[:64]
            digest.update(raw)
            size += len(raw)
    except (binascii.Error, ValueError):
        raise ValueError(
            "data is not valid base64 (the standard alphabet, padded, no line breaks)"
        ) from None
    if size > MAX_PART_BYTES:
        raise _too_large(size)
    return head, digest.hexdigest(), size


def _too_large(size: int) -> PydanticCustomError:
    return PydanticCustomError(
        PART_TOO_LARGE,
        "the part holds about {size} bytes, more than the {limit} bytes a request's parts may hold",
        {"size": size, "limit": MAX_PART_BYTES},
    )


def _from_data_url(values: Any) -> Any:
    """A ``data:`` URL given as ``url`` is its bytes, read into ``media_type`` and ``data``."""
    if not isinstance(values, dict):
        return values
    url = values.get("url")
    if not isinstance(url, str) or url[:5].lower() != "data:":
        return values
    found = _DATA_URL.match(url)
    if found is None:
        raise ValueError("a data URL is data:<media type>[;base64],<data>")
    media_type = found[1].split(";")[0].strip().lower()
    body = url[found.end() :]
    if found[2] is None:
        body = binascii.b2a_base64(unquote_to_bytes(body), newline=False).decode("ascii")
    given = values.get("media_type")
    if isinstance(given, str) and media_type and given.lower() != media_type:
        raise ValueError(f"media_type {given!r} differs from the data URL's {media_type!r}")
    kept = {key: value for key, value in values.items() if key != "url"}
    return {**kept, "media_type": given or media_type, "data": body}


class _Part(_Breakpoint):
    kind: Literal["image", "file"]
    media_type: str
    """An IANA media type, lower case, without parameters (``image/png``, ``application/pdf``)."""
    data: str | None = _omitted()
    """The bytes, base64 (standard alphabet, padded)."""
    url: str | None = _omitted()
    """The ``https`` URL the provider fetches the bytes from (a ``data:`` URL is read into
    ``media_type`` and ``data``). runport itself never fetches it."""
    cache: Literal[True] | None = _omitted()
    """A prompt-cache breakpoint after this part (Anthropic ``cache_control`` on its block,
    Bedrock a ``cachePoint`` after it); left out when absent or false."""
    cache_ttl: _CacheTTL | None = _omitted()
    """How long the breakpoint's cache entry lives (``5m``, ``1h``); only with ``cache``."""

    _sha256: str | None = PrivateAttr(default=None)
    _size: int = PrivateAttr(default=0)

    @model_validator(mode="before")
    @classmethod
    def _data_url(cls, values: Any) -> Any:
        return _from_data_url(values)

    @field_validator("media_type", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("media_type")
    @classmethod
    def _media_type(cls, value: str) -> str:
        if not _MEDIA_TYPE.fullmatch(value):
            raise ValueError(f"{value!r} is not a media type such as image/png")
        return value

    @field_validator("url")
    @classmethod
    def _https(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme.lower() != "https":
            scheme = f"{parts.scheme!r}" if parts.scheme else "no scheme"
            raise ValueError(f"a part's URL must be https or data, not {scheme}")
        if not parts.hostname:
            raise ValueError("a part's URL must name a host")
        if parts.username is not None or parts.password is not None:
            raise ValueError("a part's URL may not carry credentials (user-info)")
        return value

    @model_validator(mode="after")
    def _bytes(self) -> Any:
        if (self.data is None) == (self.url is None):
            raise ValueError("a part holds exactly one of data (base64) and url")
        if self.data is not None:
            head, sha256, size = _checked(self.data)
            marks = SIGNATURES.get(self.media_type)
            if marks is not None and sniffed_media_type(head) != self.media_type:
                found = sniffed_media_type(head)
                seen = f"the bytes of {found}" if found else "bytes of no known signature"
                raise ValueError(f"media_type is {self.media_type} but data holds {seen}")
            self._sha256 = sha256
            self._size = size
        return self

    @model_serializer(mode="wrap")
    def _fingerprinted(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        dumped = handler(self)
        if self._sha256 is not None and info.context == FINGERPRINT_CONTEXT:
            dumped.pop("data", None)
            dumped["sha256"] = self._sha256
        return dumped

    @property
    def sha256(self) -> str | None:
        """The SHA-256 (hex) of the decoded bytes; ``None`` for a URL part."""
        return self._sha256

    @property
    def size(self) -> int:
        """How many bytes ``data`` decodes to (0 for a URL part)."""
        return self._size

    def raw(self) -> bytes:
        """The decoded bytes (empty for a URL part)."""
        return b"" if self.data is None else binascii.a2b_base64(self.data)


class TextPart(_Breakpoint):
    """Text among the parts of a message."""

    kind: Literal["text"] = "text"
    text: str
    cache: Literal[True] | None = _omitted()
    """A prompt-cache breakpoint after this part (Anthropic ``cache_control`` on its block,
    Bedrock a ``cachePoint`` after it); left out when absent or false."""
    cache_ttl: _CacheTTL | None = _omitted()
    """How long the breakpoint's cache entry lives (``5m``, ``1h``); only with ``cache``."""


class ImagePart(_Part):
    """An image: its ``media_type`` (``image/…``) and either its bytes (``data``, base64) or an
    ``https`` ``url`` the provider fetches."""

    kind: Literal["image"] = "image"

    @field_validator("media_type")
    @classmethod
    def _an_image(cls, value: str) -> str:
        if not value.startswith("image/"):
            raise ValueError(f"an image part's media_type is image/..., not {value!r}")
        return value


class FilePart(_Part):
    """A document (a PDF, a text file): its ``media_type``, its bytes or ``url``, and an
    optional ``filename`` some providers show the model."""

    kind: Literal["file"] = "file"
    filename: Annotated[str, Field(min_length=1, max_length=255)] | None = _omitted()

    @field_validator("filename")
    @classmethod
    def _a_name(cls, value: str | None) -> str | None:
        if value is not None and _CONTROL.search(value):
            raise ValueError("a filename is a name, without '/', '\\' or control characters")
        return value


ContentPart = Annotated[TextPart | ImagePart | FilePart, Field(discriminator="kind")]
"""One piece of a message's ``content`` when it is a list."""
