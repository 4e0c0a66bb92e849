"""``AsyncAnthropicMessagesAdapter``: the same Messages API codec on the async HTTP driver."""

from __future__ import annotations

import httpx

from runport.anthropic._adapter import MessagesKeywords
from runport.http import AsyncHTTPAdapter


class AsyncAnthropicMessagesAdapter(MessagesKeywords[httpx.AsyncClient], AsyncHTTPAdapter):
    """``AnthropicMessagesAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``), same descriptor, same messages, equal receipts for the same
    upstream bytes — one codec makes both. Cancelling the calling task closes the upstream
    and lets ``CancelledError`` through. Release it with ``aclose()`` or ``async with``.
    """
