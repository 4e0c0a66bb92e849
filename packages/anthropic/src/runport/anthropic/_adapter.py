"""``AnthropicMessagesAdapter``: the Messages API codec on the HTTP drivers
(docs/providers-anthropic-gemini.md)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Final, TypeVar, Unpack

import httpx

from runport.anthropic._codec import MessagesCodec
from runport.http import (
    ClientT,
    CodecCarrier,
    DriverOptions,
    HTTPAdapter,
    checked_api_key,
    from_environment,
)

DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS: Final = 4096
"""The API requires ``max_tokens``; a request's ``runtime_policy.max_tokens`` overrides it."""


def make_codec(*, model: str, api_key: str | None, max_tokens: int) -> MessagesCodec:
    """The codec both flavours share, with its arguments checked."""
    if not model:
        raise ValueError("model must name the upstream model")
    checked_api_key(api_key)
    if type(max_tokens) is not int or max_tokens < 1:
        raise ValueError("max_tokens must be a positive integer")
    return MessagesCodec(model=model, api_key=api_key, max_tokens=max_tokens)


class MessagesKeywords(CodecCarrier[ClientT]):
    """The keywords of both flavours, written once."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        **options: Unpack[DriverOptions[ClientT]],
    ) -> None:
        codec = make_codec(model=model, api_key=api_key, max_tokens=max_tokens)
        super().__init__(codec, base_url=base_url, **options)
        self._show(base_url, model)


class AnthropicMessagesAdapter(MessagesKeywords[httpx.Client], HTTPAdapter):
    """A runtime adapter for Anthropic's Messages API.

    ``execute`` posts without ``stream``; ``execute_streaming`` with ``stream: true`` and
    forwards every text and tool-input fragment as its event completes. Both feed the same
    assembly, so they return equal receipts for the same content. The completion marker is
    ``message_stop``: a body that ends before it fails as ``TQX_RUNTIME_STREAM_TRUNCATED``.
    Thinking blocks are reasoning: streamed as ``ReasoningDelta``, kept in
    ``receipt.reasoning`` with their signatures (redacted blocks with their data), never the
    answer, and sent back first in the assistant turn of a later request. Structured contracts
    are answered through a forced tool whose input is the answer (ADR 0019).

    Bounded by ``max_response_bytes`` and ``deadline`` (seconds, the whole call); ``timeout``
    is the longest silence. It never retries. Pass an ``httpx.Client`` to share a pool;
    otherwise the adapter owns one, released by ``close()`` or a ``with`` block.
    """


def create_adapter(
    *, base_url: str | None = None, model: str | None = None, api_key: str | None = None
) -> AnthropicMessagesAdapter:
    """The ``runport.adapters`` entry point: ``runport run … --adapter anthropic``.

    Each argument falls back to the environment: ``ANTHROPIC_API_KEY`` and
    ``RUNPORT_ANTHROPIC_MODEL`` (both required), ``RUNPORT_ANTHROPIC_BASE_URL`` (default
    ``https://api.anthropic.com``).
    """
    return _configured(AnthropicMessagesAdapter, base_url=base_url, model=model, api_key=api_key)


if TYPE_CHECKING:
    from runport.anthropic._async_adapter import AsyncAnthropicMessagesAdapter


def create_async_adapter(
    *, base_url: str | None = None, model: str | None = None, api_key: str | None = None
) -> AsyncAnthropicMessagesAdapter:
    """The ``runport.async_adapters`` entry point: ``create_adapter``'s settings, on the
    event loop (``runport mcp``, ``serve`` and ``batch`` run it with no thread hop per
    event)."""
    from runport.anthropic._async_adapter import AsyncAnthropicMessagesAdapter

    return _configured(
        AsyncAnthropicMessagesAdapter, base_url=base_url, model=model, api_key=api_key
    )


_A = TypeVar("_A", bound="MessagesKeywords[Any]")


def _configured(
    kind: type[_A],
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
) -> _A:
    api_key, model = from_environment(
        "anthropic",
        "RUNPORT_ANTHROPIC_MODEL=claude-sonnet-4-5",
        (api_key, "ANTHROPIC_API_KEY"),
        (model, "RUNPORT_ANTHROPIC_MODEL"),
    )
    return kind(
        base_url=base_url or os.environ.get("RUNPORT_ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL,
        model=model,
        api_key=api_key,
    )
