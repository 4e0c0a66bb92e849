"""``AsyncOllamaChatAdapter``: the same ``/api/chat`` codec on the async HTTP driver."""

from __future__ import annotations

import httpx

from runport.http import AsyncHTTPAdapter
from runport.ollama._adapter import ChatKeywords


class AsyncOllamaChatAdapter(ChatKeywords[httpx.AsyncClient], AsyncHTTPAdapter):
    """``OllamaChatAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``), same descriptor, equal receipts for the same upstream bytes — one
    codec makes both. Release it with ``aclose()`` or ``async with``.
    """
