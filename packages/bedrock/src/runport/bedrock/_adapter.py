"""``BedrockConverseAdapter``: the Converse codec on the HTTP drivers (docs/providers.md)."""

from __future__ import annotations

from typing import Any, Final, Unpack

import httpx

from runport.bedrock._codec import ConverseCodec
from runport.http import ClientT, HTTPAdapter, ProviderAdapter, ProviderKeywords

DEFAULT_REGION: Final = "us-east-1"
"""Where the adapter posts unless told a ``region`` or a ``base_url``."""


def region_url(region: str) -> str:
    """Bedrock Runtime's endpoint in ``region``."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


def bedrock_keywords(keywords: Any, region: str | None) -> None:
    """Checks one credential is given, and points ``base_url`` at ``region`` unless given."""
    if keywords.get("auth") is not None and keywords.get("api_key"):
        raise ValueError("give one of api_key (a Bedrock API key) and auth (SigV4Auth)")
    if not keywords.get("base_url"):
        keywords["base_url"] = region_url(region or DEFAULT_REGION)


class ConverseKeywords(ProviderAdapter[ClientT]):
    """The keywords of both flavours: a provider's (``model``, ``api_key``, ``base_url``, the
    driver's, ``auth`` among them: ``SigV4Auth``) and ``region`` (where ``base_url`` points
    unless given)."""

    def __init__(
        self, *, region: str | None = None, **keywords: Unpack[ProviderKeywords[ClientT]]
    ) -> None:
        bedrock_keywords(keywords, region)
        super().__init__(ConverseCodec, **keywords)


class BedrockConverseAdapter(ConverseKeywords[httpx.Client], HTTPAdapter):
    """A runtime adapter for Amazon Bedrock's Converse API.

    ``execute`` posts to ``/model/{modelId}/converse``; ``execute_streaming`` to
    ``/model/{modelId}/converse-stream`` and reads its ``application/vnd.amazon.eventstream``
    answer message by message, each CRC checked, forwarding every text, reasoning and tool
    input delta as its message completes. ``messageStop`` is the completion marker; the
    usage in the ``metadata`` event after it is read to the body's end. An exception message
    mid-stream fails the call with its code (``throttlingException``: rate limited,
    ``modelStreamErrorException``: unavailable) after the events before it. A model id that
    is an ARN is percent-encoded into one path segment.

    Credentials: ``api_key`` is a Bedrock API key, sent as ``Authorization: Bearer``; or
    ``auth=SigV4Auth(region)`` signs each request from the standard AWS credential chain
    (the extra ``runport[bedrock]``). Bounded by ``max_response_bytes`` and ``deadline``
    like every runport HTTP adapter; it never retries.
    """
