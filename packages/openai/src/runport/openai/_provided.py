"""What a chat completions server did itself, read from a message or a delta
(adr/0055-what-the-provider-did-itself.md): ``annotations`` (OpenAI's search models and
OpenRouter's web search: ``url_citation``, indexes into the message's content, which is the
turn's text; OpenRouter's ``content``, the page's passage the model was given, is the
citation's ``cited_text``) are ``Citation``s, and so is each URL of a completion's top-level
``citations`` (Perplexity's: the sources, no span, repeated on every chunk and cited once);
``images`` (OpenRouter's image output: ``image_url`` parts holding a ``data:`` URL) are
generated files. An annotation or image of another kind is kept (ADR 0054)."""

from __future__ import annotations

import re
from typing import Any, Final

from runport.core import TurnBuilder
from runport.openai._errors import invalid

PROVIDER: Final = "openai"
"""The ``provider_metadata`` key under which what chat completions sent unknown is kept."""

_DATA_URL: Final = re.compile(r"data:([a-zA-Z0-9.+-]+/[a-zA-Z0-9.+-]+);base64,(.*)", re.S)


def cite_annotations(turn: TurnBuilder, notes: Any) -> None:
    if notes is None:
        return
    if type(notes) is not list:
        raise invalid("a message's annotations are not a list")
    for note in notes:
        if type(note) is not dict:
            raise invalid("an annotation is not an object")
        cited = note.get("url_citation")
        if note.get("type") != "url_citation" or type(cited) is not dict:
            turn.unknown(PROVIDER, {"annotation": note})
            continue
        start, end = cited.get("start_index"), cited.get("end_index")
        for at in (start, end):
            if at is not None and (type(at) is not int or at < 0):
                raise invalid("a url_citation's index is not a count of characters")
        source = {"type": "url", "url": cited.get("url"), "title": cited.get("title")}
        passage = cited.get("content")
        turn.citation(
            {key: value for key, value in source.items() if value is not None},
            cited_text=passage if type(passage) is str and passage else None,
            start=start,
            end=end,
        )


def cite_sources(turn: TurnBuilder, urls: Any, told: int) -> int:
    """A completion's top-level ``citations`` (Perplexity: the URLs its answer's ``[n]``
    markers count into): each URL past the ``told`` already cited is a ``Citation`` without
    a span; returns how many are cited now."""
    if type(urls) is not list:
        raise invalid("a completion's citations are not a list")
    for url in urls[told:]:
        if type(url) is not str or not url:
            raise invalid("a completion's citation is not a URL")
        turn.citation({"type": "url", "url": url})
    return max(told, len(urls))


def generated_images(turn: TurnBuilder, parts: Any) -> None:
    if parts is None:
        return
    if type(parts) is not list:
        raise invalid("a message's images are not a list")
    for part in parts:
        url = part.get("image_url", {}).get("url") if type(part) is dict else None
        found = _DATA_URL.fullmatch(url) if type(url) is str else None
        if found is None:
            turn.unknown(PROVIDER, {"image": part})
            continue
        turn.file(found[1].lower(), found[2])
