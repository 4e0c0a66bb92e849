"""``AsyncBedrockConverseAdapter`` and ``AsyncBedrockAnthropicAdapter``: the same codecs on
the async HTTP driver."""

from __future__ import annotations

import httpx

from runport.bedrock._adapter import ConverseKeywords
from runport.bedrock._anthropic import AnthropicKeywords
from runport.http import AsyncHTTPAdapter


class AsyncBedrockConverseAdapter(ConverseKeywords[httpx.AsyncClient], AsyncHTTPAdapter):
    """``BedrockConverseAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``), same descriptor, equal receipts for the same upstream bytes — one
    codec makes both. Release it with ``aclose()`` or ``async with``.
    """


class AsyncBedrockAnthropicAdapter(AnthropicKeywords[httpx.AsyncClient], AsyncHTTPAdapter):
    """``BedrockAnthropicAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``), same descriptor, equal receipts for the same upstream bytes — one
    codec makes both. Release it with ``aclose()`` or ``async with``.
    """
