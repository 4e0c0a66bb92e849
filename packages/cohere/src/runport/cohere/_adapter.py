"""``CohereChatAdapter``: the v2 chat codec on the HTTP drivers (docs/providers.md)."""

from __future__ import annotations

from typing import Final, Unpack

import httpx

from runport.cohere._codec import ChatCodec
from runport.http import ClientT, HTTPAdapter, ProviderAdapter, ProviderKeywords

DEFAULT_BASE_URL: Final = "https://api.cohere.com"
"""Cohere's API host, unless told otherwise."""


class ChatKeywords(ProviderAdapter[ClientT]):
    """The keywords of both flavours: a provider's (``model``, ``api_key``, ``base_url``, the
    driver's)."""

    default_base_url = DEFAULT_BASE_URL
    endpoint = "/v2/chat"

    def __init__(self, **keywords: Unpack[ProviderKeywords[ClientT]]) -> None:
        super().__init__(ChatCodec, **keywords)


class CohereChatAdapter(ChatKeywords[httpx.Client], HTTPAdapter):
    """A runtime adapter for Cohere's v2 chat API.

    ``execute`` posts to ``/v2/chat`` with ``"stream": false``; ``execute_streaming`` with
    ``"stream": true`` and reads its typed server-sent events: ``content-delta`` (text, or
    thinking inside a ``thinking`` content block), ``tool-plan-delta`` (the plan before tool
    calls, kept as a reasoning part of its own and sent back as ``tool_plan``),
    ``tool-call-start`` / ``-delta`` / ``-end`` (a call's id and name, then its arguments in
    pieces), ``citation-start`` (a cited span and its source). ``message-end`` is the
    completion marker, with the finish reason (``COMPLETE``, ``MAX_TOKENS``, ``TOOL_CALL``, …)
    and the usage (``tokens``, the cached part as cache reads); a ``message-end`` whose finish
    is ``ERROR`` fails the call with Cohere's error, after the events before it.

    The key goes as ``Authorization: Bearer``. Bounded by ``max_response_bytes`` and
    ``deadline`` like every runport HTTP adapter; it never retries.
    """
