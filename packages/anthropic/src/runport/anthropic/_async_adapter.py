"""``AsyncAnthropicMessagesAdapter``: the same Messages API codec on the async HTTP driver."""

from __future__ import annotations

import httpx

from runport.anthropic._adapter import DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, make_codec
from runport.http import AsyncHTTPAdapter, redact_url


class AsyncAnthropicMessagesAdapter(AsyncHTTPAdapter):
    """``AnthropicMessagesAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``), same descriptor, same messages, equal receipts for the same
    upstream bytes — one codec makes both. Cancelling the calling task closes the upstream
    and lets ``CancelledError`` through. Release it with ``aclose()`` or ``async with``.
    """

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_response_bytes: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        deadline: float | None = None,
    ) -> None:
        super().__init__(
            make_codec(model=model, api_key=api_key, max_tokens=max_tokens),
            base_url=base_url,
            http_client=http_client,
            timeout=timeout,
            max_response_bytes=max_response_bytes,
            deadline=deadline,
        )
        self._repr = f"{type(self).__name__}(url={redact_url(base_url)!r}, model={model!r})"

    def __repr__(self) -> str:
        return self._repr
