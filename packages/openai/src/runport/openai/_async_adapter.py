"""``AsyncOpenAIChatAdapter``: the same chat-completions codec on the async HTTP driver."""

from __future__ import annotations

import httpx

from runport.http import AsyncHTTPAdapter
from runport.openai._adapter import ChatCompletionsKeywords


class AsyncOpenAIChatAdapter(ChatCompletionsKeywords[httpx.AsyncClient], AsyncHTTPAdapter):
    """``OpenAIChatAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``), same descriptor, same messages, equal receipts for the same
    upstream bytes — one codec makes both.

    Cancelling the calling task closes the upstream response and lets ``CancelledError``
    through; the adapter stays usable. It binds to no event loop when built, so it may be
    made at import time and used from any loop. Release it with ``aclose()`` or
    ``async with``.
    """
