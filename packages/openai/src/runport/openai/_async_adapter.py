"""``AsyncOpenAIChatAdapter``: the same chat-completions codec on the async HTTP driver."""

from __future__ import annotations

import httpx

from runport.http import AsyncHTTPAdapter
from runport.openai._adapter import describe, make_codec
from runport.openai._request import ResponseFormatMode


class AsyncOpenAIChatAdapter(AsyncHTTPAdapter):
    """``OpenAIChatAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``), same descriptor, same messages, equal receipts for the same
    upstream bytes — one codec makes both.

    Cancelling the calling task closes the upstream response and lets ``CancelledError``
    through; the adapter stays usable. It binds to no event loop when built, so it may be
    made at import time and used from any loop. Release it with ``aclose()`` or
    ``async with``.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_response_bytes: int | None = None,
        deadline: float | None = None,
        response_format_mode: ResponseFormatMode = "json_schema",
    ) -> None:
        codec = make_codec(model=model, api_key=api_key, response_format_mode=response_format_mode)
        super().__init__(
            codec,
            base_url=base_url,
            http_client=http_client,
            timeout=timeout,
            max_response_bytes=max_response_bytes,
            deadline=deadline,
        )
        self._repr = describe(
            type(self).__name__, base_url.rstrip("/") + "/chat/completions", model
        )

    def __repr__(self) -> str:
        return self._repr
