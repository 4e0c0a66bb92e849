"""``OpenAIChatAdapter``: the chat-completions codec on the sync HTTP driver (docs/providers.md)."""

from __future__ import annotations

from functools import partial
from typing import Final, Unpack

import httpx

from runport.http import DEFAULT_TIMEOUT as _HTTP_DEFAULT_TIMEOUT
from runport.http import ClientT, HTTPAdapter, ProviderAdapter, ProviderKeywords
from runport.openai._codec import ChatCompletionsCodec
from runport.openai._request import (
    CallIdRule,
    ReasoningField,
    ResponseFormatMode,
    as_call_id_rule,
    as_reasoning_field,
    as_response_format_mode,
    as_switch,
)
from runport.ports import DEFAULT_MAX_RESPONSE_BYTES as _PORT_MAX_RESPONSE_BYTES

DEFAULT_MAX_RESPONSE_BYTES: Final = _PORT_MAX_RESPONSE_BYTES
"""docs/streaming-law.md law 8: the bound when neither the adapter nor the request sets one."""

DEFAULT_TIMEOUT: Final = _HTTP_DEFAULT_TIMEOUT
"""Ten minutes per read, as long as a slow non-streamed completion may take to start; ten
seconds to connect. A stream that stalls for a whole read timeout fails as ``TIMEOUT``."""


class ChatCompletionsKeywords(ProviderAdapter[ClientT]):
    """The keywords of both flavours: a provider's (``base_url``, ``model``, ``api_key``, the
    driver's), ``response_format_mode``, ``send_reasoning_as``, ``include_usage`` and
    ``call_ids``. The last two follow the server when unset: Mistral's API (a
    ``mistral.ai`` host) gets no ``stream_options`` and nine-alphanumeric call ids."""

    endpoint = "/chat/completions"

    def __init__(
        self,
        *,
        response_format_mode: ResponseFormatMode = "json_schema",
        send_reasoning_as: ReasoningField | None = None,
        include_usage: bool | None = None,
        call_ids: CallIdRule | None = None,
        **keywords: Unpack[ProviderKeywords[ClientT]],
    ) -> None:
        mistral = _is_mistral(keywords.get("base_url"))
        usage = as_switch(include_usage, "include_usage")
        codec = partial(
            ChatCompletionsCodec,
            response_format_mode=as_response_format_mode(response_format_mode),
            send_reasoning_as=as_reasoning_field(send_reasoning_as),
            include_usage=not mistral if usage is None else usage,
            call_ids=as_call_id_rule(call_ids or ("nine_alphanumerics" if mistral else "any")),
        )
        super().__init__(codec, **keywords)


def _is_mistral(base_url: str | None) -> bool:
    """Whether ``base_url`` is Mistral's own API, which refuses ``stream_options`` (422) and
    any tool-call id but nine letters and digits (400)."""
    if not base_url:
        return False
    try:
        host = httpx.URL(base_url).host
    except httpx.InvalidURL:
        return False  # the base URL's own check says what is wrong with it
    return host == "mistral.ai" or host.endswith(".mistral.ai")


class OpenAIChatAdapter(ChatCompletionsKeywords[httpx.Client], HTTPAdapter):
    """A runtime adapter for any server that speaks OpenAI's chat-completions API.

    ``execute`` posts without ``stream``; ``execute_streaming`` posts with ``stream: true``
    (and ``stream_options.include_usage`` unless ``include_usage`` is false) and forwards
    every text and tool-call fragment as its SSE frame completes. Both feed the same
    assembler, so they return equal receipts for the same content.

    Reasoning (``reasoning_content``, ``reasoning``, ``reasoning_details``, Mistral's
    ``thinking`` parts) is streamed as ``ReasoningDelta`` and kept in ``receipt.reasoning``;
    an assistant message's reasoning goes back as OpenRouter's ``reasoning_details`` when it
    has them, and as text only in the field ``send_reasoning_as`` names (by default none:
    adr/0031-reasoning-sent-back-per-dialect.md).

    The completion marker is ``data: [DONE]``; a body that ends cleanly after a finish reason
    is whole too. A finish reason alone is not the marker (servers put one on every chunk):
    content after it is kept, the last one stands, and a reset or stall before ``[DONE]``
    fails. A body that ends before the marker fails as ``TQX_RUNTIME_STREAM_TRUNCATED``; it
    is never passed off as a short answer.

    Every call is bounded by ``max_response_bytes`` and by ``deadline`` (seconds, the whole
    call; ``timeout`` is the longest silence). It never retries (docs/streaming-law.md,
    law 7). Pass an ``httpx.Client`` to share a pool, add a proxy or a transport; otherwise
    the adapter owns one, released by ``close()`` or a ``with`` block. Safe to share between
    threads, as the ``httpx.Client`` is.
    """
