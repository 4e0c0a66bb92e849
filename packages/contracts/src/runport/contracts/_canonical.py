from __future__ import annotations

import hashlib
import json
from json.encoder import encode_basestring
from typing import Any

from pydantic import BaseModel

from runport.contracts._parts import FINGERPRINT_CONTEXT


def _as_json(value: object) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", context=FINGERPRINT_CONTEXT)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def canonical_json(value: object) -> bytes:
    """The canonical encoding every fingerprint is taken over.

    Keys sorted by code point, no whitespace, non-ASCII kept as UTF-8, numbers as Python's
    ``json`` writes them (``1.0`` stays ``1.0``; exponents are written ``1e+16`` where serde
    writes ``1e16``). NaN and the infinities are not JSON and are refused with ``ValueError``.
    Pydantic models are encoded by their JSON form, with an image or file part's ``data``
    written as the SHA-256 of its bytes (``sha256``): the encoding covers every byte of an image
    without holding it.
    """
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_as_json,
    ).encode("utf-8")


_SLICE = 1 << 16
_ESCAPED = bytes(range(0x20)) + b'"\\'


def fingerprint(value: object) -> str:
    """Lower-case hex SHA-256 of ``canonical_json(value)``.

    A long string (a whole text output) is hashed a slice at a time rather than encoded into one
    more full copy, so fingerprinting an 8 MB answer keeps memory flat. Slicing by characters is
    exact: JSON escapes characters one at a time, so the slices' encodings concatenate to the
    whole encoding.
    """
    if type(value) is not str:
        return hashlib.sha256(canonical_json(value)).hexdigest()
    if len(value) <= _SLICE:
        # what json.dumps does for a lone string, without making an encoder for it
        return hashlib.sha256(encode_basestring(value).encode("utf-8")).hexdigest()
    digest = hashlib.sha256(b'"')
    for start in range(0, len(value), _SLICE):
        piece = value[start : start + _SLICE].encode("utf-8")
        if len(piece.translate(None, _ESCAPED)) != len(piece):
            piece = canonical_json(value[start : start + _SLICE])[1:-1]
        digest.update(piece)
    digest.update(b'"')
    return digest.hexdigest()
