"""``OpenAIResponsesAdapter`` and ``AsyncOpenAIResponsesAdapter``: the Responses API codec on
the sync and the async HTTP driver (docs/providers-openai-responses.md)."""

from __future__ import annotations

from functools import partial
from typing import Unpack

import httpx

from runport.http import (
    AsyncHTTPAdapter,
    ClientT,
    HTTPAdapter,
    ProviderAdapter,
    ProviderKeywords,
)
from runport.openai._request import ResponseFormatMode, as_response_format_mode
from runport.openai._responses._codec import ResponsesCodec


class ResponsesKeywords(ProviderAdapter[ClientT]):
    """The keywords of both flavours: a provider's (``base_url``, ``model``, ``api_key``, the
    driver's), ``response_format_mode`` as the chat adapters take it, and ``store``."""

    endpoint = "/responses"

    def __init__(
        self,
        *,
        response_format_mode: ResponseFormatMode = "json_schema",
        store: bool = False,
        **keywords: Unpack[ProviderKeywords[ClientT]],
    ) -> None:
        if type(store) is not bool:
            raise ValueError("store must be True or False")
        codec = partial(
            ResponsesCodec,
            response_format_mode=as_response_format_mode(response_format_mode),
            store=store,
        )
        super().__init__(codec, **keywords)


class OpenAIResponsesAdapter(ResponsesKeywords[httpx.Client], HTTPAdapter):
    """A runtime adapter for OpenAI's Responses API (``POST {base_url}/responses``).

    ``execute`` posts without ``stream``; ``execute_streaming`` posts with ``stream: true``
    and forwards each text delta, reasoning delta (summaries, or ``reasoning_text`` where a
    server streams the reasoning itself) and call fragment as its event arrives. Both read
    through the same assembly, so they return equal receipts for the same output.

    Stateless by default (adr/0032-openai-responses-stateless.md): every request carries the
    whole conversation and ``store: false``, so nothing lives at the provider; when
    ``runtime_policy.reasoning`` asks for reasoning it also asks for
    ``reasoning.encrypted_content``, kept in ``ReasoningPart.provider_metadata`` and sent back
    as a ``reasoning`` item in the next turn of a run. ``store=True`` lets the provider keep
    the responses (its own retention applies).

    The completion marker is one of ``response.completed``, ``response.incomplete``
    (``max_output_tokens`` → finish reason ``length``) and ``response.failed`` (a coded
    failure); a body that ends before it fails as ``TQX_RUNTIME_STREAM_TRUNCATED``. Built-in
    tools (web search, file search, code interpreter, MCP) ran at the provider: their items
    are not calls. Bounds, deadline, retries (none) and the client are the chat adapter's.
    """


class AsyncOpenAIResponsesAdapter(ResponsesKeywords[httpx.AsyncClient], AsyncHTTPAdapter):
    """``OpenAIResponsesAdapter``'s event-loop twin: same keywords (``http_client`` is an
    ``httpx.AsyncClient``), same descriptor, equal receipts for the same upstream bytes — one
    codec makes both. Cancelling the calling task closes the upstream response; release it
    with ``aclose()`` or ``async with``."""
