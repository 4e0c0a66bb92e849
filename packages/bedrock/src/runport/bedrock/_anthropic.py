"""``BedrockAnthropicAdapter``: the InvokeModel codec for Claude on the HTTP drivers
(docs/providers.md)."""

from __future__ import annotations

from functools import partial
from typing import Unpack

import httpx

from runport.anthropic import DEFAULT_MAX_TOKENS
from runport.bedrock._adapter import bedrock_keywords
from runport.bedrock._invoke import AnthropicInvokeCodec
from runport.http import ClientT, HTTPAdapter, ProviderAdapter, ProviderKeywords


class AnthropicKeywords(ProviderAdapter[ClientT]):
    """The keywords of both flavours: a provider's (``model``, ``api_key``, ``base_url``, the
    driver's, ``auth`` among them: ``SigV4Auth``), ``region`` (where ``base_url`` points
    unless given) and ``max_tokens`` (the Messages API requires one; a request's
    ``runtime_policy.max_tokens`` overrides it)."""

    def __init__(
        self,
        *,
        region: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        **keywords: Unpack[ProviderKeywords[ClientT]],
    ) -> None:
        if type(max_tokens) is not int or max_tokens < 1:
            raise ValueError("max_tokens must be a positive integer")
        bedrock_keywords(keywords, region)
        super().__init__(partial(AnthropicInvokeCodec, max_tokens=max_tokens), **keywords)


class BedrockAnthropicAdapter(AnthropicKeywords[httpx.Client], HTTPAdapter):
    """A runtime adapter for Anthropic's Claude models through Bedrock's InvokeModel.

    ``execute`` posts Anthropic's Messages body (``anthropic_version: "bedrock-2023-05-31"``,
    no ``model``: it is in the path) to ``/model/{modelId}/invoke``; ``execute_streaming`` to
    ``/model/{modelId}/invoke-with-response-stream``, whose
    ``application/vnd.amazon.eventstream`` answer carries one Anthropic stream event per
    ``chunk`` message (base64 in its ``bytes``), each message CRC checked and each event read
    as ``AnthropicMessagesAdapter`` reads it: text, thinking (signatures kept under
    ``provider_metadata["anthropic"]``), tool calls, a structured answer through a forced
    tool, ``message_stop`` the completion marker. An exception message mid-stream fails the
    call with its code after the events before it; a 424 is retryable. A model id that is an
    ARN (an inference profile's) is percent-encoded into one path segment.

    Credentials as for ``BedrockConverseAdapter``: ``api_key`` (a Bedrock API key, sent as
    ``Authorization: Bearer``) or ``auth=SigV4Auth(region)``. Bounded by
    ``max_response_bytes`` and ``deadline``; it never retries.
    """
