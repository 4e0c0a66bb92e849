"""``AsyncGeminiAdapter``: the same ``generateContent`` codec on the async HTTP driver."""

from __future__ import annotations

import httpx

from runport.gemini._adapter import GenerateContentKeywords
from runport.http import AsyncHTTPAdapter


class AsyncGeminiAdapter(GenerateContentKeywords[httpx.AsyncClient], AsyncHTTPAdapter):
    """``GeminiAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``), same descriptor, same messages, equal receipts for the same
    upstream bytes — one codec makes both. Cancelling the calling task closes the upstream
    and lets ``CancelledError`` through. Release it with ``aclose()`` or ``async with``.
    """
