"""What every frontend protocol shares when it shows what the provider did itself — server
tools, citations, generated files (adr/0064-what-the-provider-did-itself-in-the-ui.md):

- ``shown_citation`` is a citation as both protocols show it;
- ``link`` says whether a model-supplied URL may be shown as a link (``http``/``https`` with a
  host); runport never fetches it;
- ``data_url`` writes a generated file as a ``data:`` URL (its bytes were checked against
  their media type when the turn read them, previews included);
- ``receipt_json`` writes a turn's receipt for a frontend, its generated files by digest:
  the file's own part carries the bytes once.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from runport.contracts import Citation, ExecutionReceipt
from runport.server._frames import json_string

_LINK = re.compile(
    r"(?i:https?)://"  # the scheme
    r"(?:[^/?#@]*@)?"  # user-info, if any
    r"(?:\[[0-9A-Fa-f:.]+\]|[^/?#:@\[\]]+)"  # a host: an IP literal or a name, never empty
    r"(?::[0-9]*)?(?:[/?#]|\Z)"  # a port, then the path, query, fragment or the end
)
_NOT_IN_A_LINK = re.compile(r"[\s\x00-\x1f\x7f]")

compact_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode
"""``json.dumps(value, separators=(",", ":"), ensure_ascii=True)``, its encoder made once."""


def link(url: str | None) -> str | None:
    """``url`` when a page may show it as a link: ``http`` or ``https`` with a host, and no
    whitespace or control character anywhere; else ``None`` (a ``javascript:``, ``data:`` or
    ``file:`` URL a model wrote is never put where a page makes it a link)."""
    if url and _LINK.match(url) and not _NOT_IN_A_LINK.search(url):
        return url
    return None


def data_url(media_type: str, data: str) -> tuple[bytes, ...]:
    """A generated file's ``data:`` URL as a JSON string, in pieces for the payload's one
    join (a file is copied once into its payload, not once per piece). ``data`` is base64
    (the turn checked it), so only the media type needs escaping."""
    escaped = json_string(media_type)[1:-1]
    return (b'"data:', escaped, b";base64,", data.encode("ascii"), b'"')


def receipt_json(receipt: ExecutionReceipt) -> bytes:
    """The receipt's JSON as a frontend shows it: as it is, except that each generated file
    is its ``media_type``, ``sha256`` and ``size`` in place of its bytes, which the file's
    own part (UI stream ``file``, AG-UI ``runport.file`` activity) already carried."""
    if not receipt.files:
        return receipt.model_dump_json().encode()
    shown = receipt.model_dump(mode="json")
    shown["files"] = [
        {
            **{key: value for key, value in dumped.items() if key != "data"},
            "sha256": part.sha256,
            "size": part.size,
        }
        for part, dumped in zip(receipt.files, shown["files"], strict=True)
    ]
    return compact_json(shown).encode("ascii")


class ShownCitation(NamedTuple):
    """A citation as a frontend shows it, each part the JSON members of an object (``"key":
    value`` joined by commas, in the protocols' camelCase), written without a JSON encoder:
    a citation costs its frame a few joins, as a tool call's frames do."""

    source: bytes
    """The source's own members: ``url`` (a link only: see ``link``) and ``title`` for a web
    page; ``title`` and ``filename`` for a document."""
    more: bytes
    """What else is known, each where given: ``documentIndex``, ``fileId``, and the answer's
    ``citedText``, ``start`` and ``end``; empty when nothing is."""


def _members(pairs: tuple[tuple[bytes, str | int | None], ...]) -> bytes:
    return b",".join(
        [
            b'"' + key + b'":' + (json_string(value) if isinstance(value, str) else b"%d" % value)
            for key, value in pairs
            if value is not None
        ]
    )


def shown_citation(citation: Citation) -> ShownCitation | None:
    """``citation`` as a frontend shows it; ``None`` for a URL source whose URL is not a
    link, which is not shown (the receipt keeps it)."""
    source = citation.source
    if source.type == "url":
        url = link(source.url)
        if url is None:
            return None
        own = _members(((b"url", url), (b"title", source.title)))
    else:
        own = _members(((b"title", source.title), (b"filename", source.filename)))
    more = _members(
        (
            (b"documentIndex", source.document_index),
            (b"fileId", source.file_id),
            (b"citedText", citation.cited_text),
            (b"start", citation.start),
            (b"end", citation.end),
        )
    )
    return ShownCitation(own, more)
