"""``OpenAIChatAdapter``: the chat-completions codec on the sync HTTP driver (docs/providers.md)."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Final, TypedDict, TypeVar, Unpack

import httpx

from runport.http import DEFAULT_TIMEOUT as _HTTP_DEFAULT_TIMEOUT
from runport.http import (
    ClientT,
    CodecCarrier,
    DriverOptions,
    HTTPAdapter,
    checked_api_key,
    from_environment,
    redact_url,
)
from runport.openai._codec import ChatCompletionsCodec
from runport.openai._request import (
    ReasoningField,
    ResponseFormatMode,
    as_reasoning_field,
    as_response_format_mode,
)
from runport.ports import DEFAULT_MAX_RESPONSE_BYTES as _PORT_MAX_RESPONSE_BYTES

DEFAULT_MAX_RESPONSE_BYTES: Final = _PORT_MAX_RESPONSE_BYTES
"""docs/streaming-law.md law 8: the bound when neither the adapter nor the request sets one."""

DEFAULT_TIMEOUT: Final = _HTTP_DEFAULT_TIMEOUT
"""Ten minutes per read, as long as a slow non-streamed completion may take to start; ten
seconds to connect. A stream that stalls for a whole read timeout fails as ``TIMEOUT``."""


def make_codec(
    *,
    model: str,
    api_key: str | None,
    response_format_mode: ResponseFormatMode,
    send_reasoning_as: ReasoningField | None = None,
) -> ChatCompletionsCodec:
    """The codec both flavours share, with its arguments checked."""
    if not model:
        raise ValueError("model must name the upstream model")
    checked_api_key(api_key)
    as_response_format_mode(response_format_mode)
    return ChatCompletionsCodec(
        model=model,
        api_key=api_key,
        response_format_mode=response_format_mode,
        send_reasoning_as=as_reasoning_field(send_reasoning_as),
    )


class ChatCompletionsKeywords(CodecCarrier[ClientT]):
    """The keywords of both flavours, written once."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        response_format_mode: ResponseFormatMode = "json_schema",
        send_reasoning_as: ReasoningField | None = None,
        **options: Unpack[DriverOptions[ClientT]],
    ) -> None:
        codec = make_codec(
            model=model,
            api_key=api_key,
            response_format_mode=response_format_mode,
            send_reasoning_as=send_reasoning_as,
        )
        super().__init__(codec, base_url=base_url, **options)
        self._show(base_url.rstrip("/") + "/chat/completions", model)


class OpenAIChatAdapter(ChatCompletionsKeywords[httpx.Client], HTTPAdapter):
    """A runtime adapter for any server that speaks OpenAI's chat-completions API.

    ``execute`` posts without ``stream``; ``execute_streaming`` posts with ``stream: true``
    (and ``include_usage``) and forwards every text and tool-call fragment as its SSE frame
    completes. Both feed the same assembler, so they return equal receipts for the same content.

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


def create_adapter(
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    response_format_mode: str | None = None,
    send_reasoning_as: str | None = None,
) -> OpenAIChatAdapter:
    """The ``runport.adapters`` entry point: ``runport run … --adapter openai``.

    Each argument falls back to the environment: ``RUNPORT_OPENAI_BASE_URL``,
    ``RUNPORT_OPENAI_MODEL``, ``OPENAI_API_KEY`` (optional: local servers need none),
    ``RUNPORT_OPENAI_RESPONSE_FORMAT`` (``json_schema``, ``json_object`` or ``none``) and
    ``RUNPORT_OPENAI_SEND_REASONING_AS`` (``reasoning_content`` or ``reasoning``; unset, no
    reasoning text is sent back). There is no default server or model: a run must say where
    it goes.
    """
    return _configured(
        OpenAIChatAdapter,
        base_url=base_url,
        model=model,
        api_key=api_key,
        response_format_mode=response_format_mode,
        send_reasoning_as=send_reasoning_as,
    )


if TYPE_CHECKING:
    from runport.openai._async_adapter import AsyncOpenAIChatAdapter


def create_async_adapter(
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    response_format_mode: str | None = None,
    send_reasoning_as: str | None = None,
) -> AsyncOpenAIChatAdapter:
    """The ``runport.async_adapters`` entry point: ``create_adapter``'s settings, on the
    event loop (``runport mcp``, ``serve`` and ``batch`` run it with no thread hop per
    event)."""
    from runport.openai._async_adapter import AsyncOpenAIChatAdapter

    return _configured(
        AsyncOpenAIChatAdapter,
        base_url=base_url,
        model=model,
        api_key=api_key,
        response_format_mode=response_format_mode,
        send_reasoning_as=send_reasoning_as,
    )


_A = TypeVar("_A", bound="ChatCompletionsKeywords[Any]")


def _configured(
    kind: type[_A],
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    response_format_mode: str | None = None,
    send_reasoning_as: str | None = None,
) -> _A:
    settings = environment_settings(
        "openai",
        base_url=base_url,
        model=model,
        api_key=api_key,
        response_format_mode=response_format_mode,
    )
    reasoning = send_reasoning_as or os.environ.get("RUNPORT_OPENAI_SEND_REASONING_AS")
    return kind(**settings, send_reasoning_as=as_reasoning_field(reasoning))


class EnvironmentSettings(TypedDict):
    base_url: str
    model: str
    api_key: str | None
    response_format_mode: ResponseFormatMode


def environment_settings(
    adapter: str,
    *,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    response_format_mode: str | None,
) -> EnvironmentSettings:
    """What both OpenAI entry points read the same way: each argument, else its environment
    variable (``RUNPORT_OPENAI_BASE_URL``, ``RUNPORT_OPENAI_MODEL``, ``OPENAI_API_KEY``,
    ``RUNPORT_OPENAI_RESPONSE_FORMAT``); logged without the key."""
    base_url, model = from_environment(
        adapter,
        "RUNPORT_OPENAI_BASE_URL=https://api.openai.com/v1, RUNPORT_OPENAI_MODEL=gpt-4o-mini",
        (base_url, "RUNPORT_OPENAI_BASE_URL"),
        (model, "RUNPORT_OPENAI_MODEL"),
    )
    mode = response_format_mode or os.environ.get("RUNPORT_OPENAI_RESPONSE_FORMAT")
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    logging.getLogger("runport.openai").info(
        "%s adapter: %s, model %s, %s",
        adapter,
        redact_url(base_url),
        model,
        "with an API key" if key else "without an API key",
    )
    return {
        "base_url": base_url,
        "model": model,
        "api_key": key,
        "response_format_mode": as_response_format_mode(mode or "json_schema"),
    }
