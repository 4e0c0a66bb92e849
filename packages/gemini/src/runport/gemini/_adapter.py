"""``GeminiAdapter``: the ``generateContent`` codec on the HTTP drivers
(docs/providers-anthropic-gemini.md)."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Final, TypeVar, Unpack

import httpx

from runport.gemini._codec import GenerateContentCodec
from runport.http import (
    ClientT,
    CodecCarrier,
    DriverOptions,
    HTTPAdapter,
    checked_api_key,
    from_environment,
)

DEFAULT_BASE_URL: Final = "https://generativelanguage.googleapis.com"

_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def make_codec(*, model: str, api_key: str | None) -> GenerateContentCodec:
    """The codec both flavours share, with its arguments checked."""
    model = model.removeprefix("models/")
    if not _MODEL.fullmatch(model):
        raise ValueError(
            "model must name a Gemini model (letters, digits, '.', '_', '-'), e.g. gemini-2.5-flash"
        )
    return GenerateContentCodec(model=model, api_key=checked_api_key(api_key))


class GenerateContentKeywords(CodecCarrier[ClientT]):
    """The keywords of both flavours, written once."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        **options: Unpack[DriverOptions[ClientT]],
    ) -> None:
        super().__init__(make_codec(model=model, api_key=api_key), base_url=base_url, **options)
        self._show(base_url, model)


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


def create_adapter(
    *, base_url: str | None = None, model: str | None = None, api_key: str | None = None
) -> GeminiAdapter:
    """The ``runport.adapters`` entry point: ``runport run … --adapter gemini``.

    Each argument falls back to the environment: ``GEMINI_API_KEY`` (else ``GOOGLE_API_KEY``)
    and ``RUNPORT_GEMINI_MODEL`` (both required), ``RUNPORT_GEMINI_BASE_URL`` (default
    ``https://generativelanguage.googleapis.com``).
    """
    return _configured(GeminiAdapter, base_url=base_url, model=model, api_key=api_key)


if TYPE_CHECKING:
    from runport.gemini._async_adapter import AsyncGeminiAdapter


def create_async_adapter(
    *, base_url: str | None = None, model: str | None = None, api_key: str | None = None
) -> AsyncGeminiAdapter:
    """The ``runport.async_adapters`` entry point: ``create_adapter``'s settings, on the
    event loop (``runport mcp``, ``serve`` and ``batch`` run it with no thread hop per
    event)."""
    from runport.gemini._async_adapter import AsyncGeminiAdapter

    return _configured(AsyncGeminiAdapter, base_url=base_url, model=model, api_key=api_key)


_A = TypeVar("_A", bound="GenerateContentKeywords[Any]")


def _configured(
    kind: type[_A],
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
) -> _A:
    api_key, model = from_environment(
        "gemini",
        "RUNPORT_GEMINI_MODEL=gemini-2.5-flash",
        (api_key, "GEMINI_API_KEY", "GOOGLE_API_KEY"),
        (model, "RUNPORT_GEMINI_MODEL"),
    )
    return kind(
        base_url=base_url or os.environ.get("RUNPORT_GEMINI_BASE_URL") or DEFAULT_BASE_URL,
        model=model,
        api_key=api_key,
    )
