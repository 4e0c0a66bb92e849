"""``AsyncCohereChatAdapter``: the same v2 chat codec on the async HTTP driver."""

from __future__ import annotations

import httpx

from runport.cohere._adapter import ChatKeywords
from runport.http import AsyncHTTPAdapter


class AsyncCohereChatAdapter(ChatKeywords[httpx.AsyncClient], AsyncHTTPAdapter):
    """``CohereChatAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``), same descriptor, equal receipts for the same upstream bytes — one
    codec makes both. Release it with ``aclose()`` or ``async with``.
    """
