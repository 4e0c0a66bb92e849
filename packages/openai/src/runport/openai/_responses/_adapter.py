"""``OpenAIResponsesAdapter`` and ``AsyncOpenAIResponsesAdapter``: the Responses API codec on
the sync and the async HTTP driver (docs/providers-openai-responses.md)."""

from __future__ import annotations

from typing import Any, TypeVar, Unpack

import httpx

from runport.http import (
    AsyncHTTPAdapter,
    ClientT,
    CodecCarrier,
    DriverOptions,
    HTTPAdapter,
    checked_api_key,
)
from runport.openai._adapter import environment_settings
from runport.openai._request import ResponseFormatMode, as_response_format_mode
from runport.openai._responses._codec import ResponsesCodec


class ResponsesKeywords(CodecCarrier[ClientT]):
    """The keywords of both flavours, written once: the chat adapters' (``base_url``,
    ``model``, ``api_key``, ``response_format_mode``, the driver's options) and ``store``."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        response_format_mode: ResponseFormatMode = "json_schema",
        store: bool = False,
        **options: Unpack[DriverOptions[ClientT]],
    ) -> None:
        if not model:
            raise ValueError("model must name the upstream model")
        checked_api_key(api_key)
        if type(store) is not bool:
            raise ValueError("store must be True or False")
        codec = ResponsesCodec(
            model=model,
            api_key=api_key,
            response_format_mode=as_response_format_mode(response_format_mode),
            store=store,
        )
        super().__init__(codec, base_url=base_url, **options)
        self._show(base_url.rstrip("/") + "/responses", model)


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


_A = TypeVar("_A", bound="ResponsesKeywords[Any]")


def create_responses_adapter(
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    response_format_mode: str | None = None,
) -> OpenAIResponsesAdapter:
    """The ``runport.adapters`` entry point ``openai-responses``: ``runport run …
    --adapter openai-responses``. Each argument falls back to the environment the chat
    adapter reads: ``RUNPORT_OPENAI_BASE_URL``, ``RUNPORT_OPENAI_MODEL``, ``OPENAI_API_KEY``,
    ``RUNPORT_OPENAI_RESPONSE_FORMAT``."""
    return _configured(
        OpenAIResponsesAdapter,
        base_url=base_url,
        model=model,
        api_key=api_key,
        response_format_mode=response_format_mode,
    )


def create_async_responses_adapter(
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    response_format_mode: str | None = None,
) -> AsyncOpenAIResponsesAdapter:
    """The ``runport.async_adapters`` entry point ``openai-responses``: the same settings, on
    the event loop."""
    return _configured(
        AsyncOpenAIResponsesAdapter,
        base_url=base_url,
        model=model,
        api_key=api_key,
        response_format_mode=response_format_mode,
    )


def _configured(
    kind: type[_A],
    *,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    response_format_mode: str | None,
) -> _A:
    settings = environment_settings(
        "openai-responses",
        base_url=base_url,
        model=model,
        api_key=api_key,
        response_format_mode=response_format_mode,
    )
    return kind(**settings)
