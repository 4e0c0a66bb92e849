"""What every frontend protocol shares when it shows what the provider did itself — server
tools, citations, generated files (adr/0064-what-the-provider-did-itself-in-the-ui.md):

- ``citation_fields`` is a citation as both protocols show it;
- ``link`` says whether a model-supplied URL may be shown as a link (``http``/``https`` with a
  host); runport never fetches it;
- ``data_url`` writes a generated file as a ``data:`` URL (its bytes were checked against
  their media type when the turn read them, previews included);
- ``receipt_json`` writes a turn's receipt for a frontend, its generated files by digest:
  the file's own part carries the bytes once.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from pydantic import JsonValue

from runport.contracts import Citation, ExecutionReceipt
from runport.server._frames import json_string

_LINK_SCHEMES = frozenset({"http", "https"})


def link(url: str | None) -> str | None:
    """``url`` when a page may show it as a link: ``http`` or ``https`` with a host and no
    control characters or whitespace; else ``None`` (a ``javascript:``, ``data:`` or
    ``file:`` URL a model wrote is never put where a page makes it a link)."""
    if not url or any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in _LINK_SCHEMES or not parts.hostname:
        return None
    return url


def data_url(media_type: str, data: str) -> bytes:
    """A generated file as a JSON string holding its ``data:`` URL. ``data`` is base64 (the
    turn checked it), so only the media type needs escaping; the bytes are joined once."""
    escaped = json_string(media_type)[1:-1]
    return b"".join((b'"data:', escaped, b";base64,", data.encode("ascii"), b'"'))


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
    return json.dumps(shown, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def citation_fields(citation: Citation) -> dict[str, JsonValue] | None:
    """A citation as a frontend shows it, in the protocols' camelCase: the source's ``type``,
    its ``url`` (a link only: see ``link``), ``title``, ``filename``, ``documentIndex``,
    ``fileId``, and the answer's ``citedText``, ``start``, ``end`` — each where given. A URL
    source whose URL is not a link is not shown (``None``): the receipt keeps it."""
    source = citation.source
    url = None
    if source.type == "url":
        url = link(source.url)
        if url is None:
            return None
    fields: dict[str, JsonValue] = {"type": source.type}
    for key, value in (
        ("url", url),
        ("title", source.title),
        ("filename", source.filename),
        ("documentIndex", source.document_index),
        ("fileId", source.file_id),
        ("citedText", citation.cited_text),
        ("start", citation.start),
        ("end", citation.end),
    ):
        if value is not None:
            fields[key] = value
    return fields
