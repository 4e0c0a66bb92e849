"""``GeminiAdapter``: the ``generateContent`` codec on the HTTP drivers
(docs/providers-anthropic-gemini.md)."""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Final, Unpack, cast

import httpx

from runport.gemini._codec import GenerateContentCodec
from runport.http import ClientT, HTTPAdapter, ProviderAdapter, ProviderKeywords, on_vertex

DEFAULT_BASE_URL: Final = "https://generativelanguage.googleapis.com"

_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def make_codec(
    *, model: str, api_key: str | None, models: str = "v1beta/models"
) -> GenerateContentCodec:
    """The codec both flavours share, its model named the way a request path can carry;
    ``models`` the path of the models (Vertex AI's under a project)."""
    model = model.removeprefix("models/")
    if not _MODEL.fullmatch(model):
        raise ValueError(
            "model must name a Gemini model (letters, digits, '.', '_', '-'), e.g. gemini-2.5-flash"
        )
    return GenerateContentCodec(model=model, api_key=api_key, models=models)


class GenerateContentKeywords(ProviderAdapter[ClientT]):
    """The keywords of both flavours: a provider's (``model``, ``api_key``, ``base_url``, the
    driver's) and Vertex AI's (``project``, ``location``; ``vertex=True`` alone is Vertex's
    express mode, with an API key)."""

    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        *,
        vertex: bool = False,
        project: str | None = None,
        location: str | None = None,
        **keywords: Unpack[ProviderKeywords[ClientT]],
    ) -> None:
        place = on_vertex(
            cast(dict[str, Any], keywords), vertex=vertex, project=project, location=location
        )
        models = "v1beta/models" if place is None else place.models("google")
        super().__init__(partial(make_codec, models=models), **keywords)


class GeminiAdapter(GenerateContentKeywords[httpx.Client], HTTPAdapter):
    """A runtime adapter for the Gemini API.

    ``execute`` posts to ``:generateContent``; ``execute_streaming`` to
    ``:streamGenerateContent?alt=sse`` and forwards every text part and function call as its
    chunk completes. Both feed the same assembly, so they return equal receipts for the same
    content. The completion marker is a candidate's ``finishReason`` (``SAFETY``,
    ``RECITATION`` and ``MAX_TOKENS`` complete with that reason); a stream that ends without
    one fails as ``TQX_RUNTIME_STREAM_TRUNCATED``, never as a short answer; content after a
    ``finishReason`` is kept (the last one stands). Thought parts are reasoning: streamed as
    ``ReasoningDelta``, kept in ``receipt.reasoning`` with their signatures, never the answer,
    and sent back as thought parts in later turns. The key travels in the ``x-goog-api-key``
    header only.

    Bounded by ``max_response_bytes`` and ``deadline`` (seconds, the whole call); ``timeout``
    is the longest silence. It never retries. Pass an ``httpx.Client`` to share a pool;
    otherwise the adapter owns one, released by ``close()`` or a ``with`` block.
    """
