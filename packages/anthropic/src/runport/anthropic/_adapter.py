"""``AnthropicMessagesAdapter``: the Messages API codec on the HTTP drivers
(docs/providers-anthropic-gemini.md)."""

from __future__ import annotations

from functools import partial
from typing import Any, Final, Unpack, cast

import httpx

from runport.anthropic._codec import MessagesCodec
from runport.http import ClientT, HTTPAdapter, ProviderAdapter, ProviderKeywords, on_vertex

DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS: Final = 4096
"""The API requires ``max_tokens``; a request's ``runtime_policy.max_tokens`` overrides it."""


class MessagesKeywords(ProviderAdapter[ClientT]):
    """The keywords of both flavours: a provider's (``model``, ``api_key``, ``base_url``, the
    driver's), ``max_tokens``, and Vertex AI's (``project``, ``location``; ``vertex=True``
    insists on Vertex AI, so a missing project is an error, not Anthropic's own API)."""

    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        vertex: bool = False,
        project: str | None = None,
        location: str | None = None,
        **keywords: Unpack[ProviderKeywords[ClientT]],
    ) -> None:
        if type(max_tokens) is not int or max_tokens < 1:
            raise ValueError("max_tokens must be a positive integer")
        place = on_vertex(
            cast(dict[str, Any], keywords),
            vertex=vertex,
            project=project,
            location=location,
            express=False,
        )
        models = None if place is None else place.models("anthropic")
        codec = partial(MessagesCodec, max_tokens=max_tokens, models=models)
        super().__init__(codec, **keywords)


class AnthropicMessagesAdapter(MessagesKeywords[httpx.Client], HTTPAdapter):
    """A runtime adapter for Anthropic's Messages API.

    ``execute`` posts without ``stream``; ``execute_streaming`` with ``stream: true`` and
    forwards every text and tool-input fragment as its event completes. Both feed the same
    assembly, so they return equal receipts for the same content. The completion marker is
    ``message_stop``: a body that ends before it fails as ``TQX_RUNTIME_STREAM_TRUNCATED``.
    Thinking blocks are reasoning: streamed as ``ReasoningDelta``, kept in
    ``receipt.reasoning`` with their signatures (redacted blocks with their data), never the
    answer, and sent back first in the assistant turn of a later request. Structured contracts
    are answered through a forced tool whose input is the answer (ADR 0019).

    Bounded by ``max_response_bytes`` and ``deadline`` (seconds, the whole call); ``timeout``
    is the longest silence. It never retries. Pass an ``httpx.Client`` to share a pool;
    otherwise the adapter owns one, released by ``close()`` or a ``with`` block.
    """
