"""``OllamaChatAdapter``: the ``/api/chat`` codec on the HTTP drivers (docs/providers.md)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Final, Unpack

import httpx

from runport.http import ClientT, HTTPAdapter, ProviderAdapter, ProviderKeywords
from runport.ollama._codec import ChatCodec

DEFAULT_BASE_URL: Final = "http://localhost:11434"
"""Where a local Ollama listens unless told otherwise."""


def context_length(num_ctx: int | str | None) -> int | None:
    """``num_ctx`` as a positive number of tokens (a string of digits, from the environment,
    is read as one); ``None`` stays ``None``."""
    if num_ctx is None:
        return None
    if isinstance(num_ctx, str) and num_ctx.strip().isdigit():
        num_ctx = int(num_ctx)
    if isinstance(num_ctx, bool) or not isinstance(num_ctx, int) or num_ctx < 1:
        raise ValueError(f"num_ctx must be a positive number of tokens, not {num_ctx!r}")
    return num_ctx


class ChatKeywords(ProviderAdapter[ClientT]):
    """The keywords of both flavours: a provider's (``model``, ``api_key``, ``base_url``, the
    driver's) and Ollama's: ``num_ctx`` (the context window, in tokens), ``options`` (any of
    Ollama's model options, sent with every request) and ``keep_alive`` (how long the model
    stays loaded: ``"5m"``, seconds, ``-1``)."""

    default_base_url = DEFAULT_BASE_URL
    endpoint = "/api/chat"

    def __init__(
        self,
        *,
        num_ctx: int | str | None = None,
        options: Mapping[str, Any] | None = None,
        keep_alive: str | int | None = None,
        **keywords: Unpack[ProviderKeywords[ClientT]],
    ) -> None:
        merged = dict(options or {})
        length = context_length(num_ctx)
        if length is not None:
            merged["num_ctx"] = length
        if isinstance(keep_alive, str) and keep_alive.lstrip("-").isdigit():
            keep_alive = int(keep_alive)
        super().__init__(partial(ChatCodec, options=merged, keep_alive=keep_alive), **keywords)


class OllamaChatAdapter(ChatKeywords[httpx.Client], HTTPAdapter):
    """A runtime adapter for Ollama's native chat API.

    ``execute`` posts to ``/api/chat`` with ``"stream": false``; ``execute_streaming`` with
    ``"stream": true`` and reads the ``application/x-ndjson`` answer line by line, forwarding
    each line's thinking, text and tool calls (each whole) as the line arrives. The line with
    ``"done": true`` is the completion marker: a body that ends before it fails as
    ``TQX_RUNTIME_STREAM_TRUNCATED``; an ``{"error": …}`` line fails the call after the events
    before it. ``done_reason`` is the finish reason (``length``: the answer was cut at
    ``num_predict`` or the context window; ``stop`` with calls finishes ``tool_calls``);
    ``prompt_eval_count`` and ``eval_count`` are the usage.

    Unlike Ollama's OpenAI-compatible ``/v1`` endpoint, this one takes ``num_ctx``: a prompt
    longer than the model's default window is not silently cut there. The structured output
    schema goes as ``format``; images by their bytes; ``runtime_policy.reasoning`` as
    ``think``. Bounded by ``max_response_bytes`` and ``deadline`` like every runport HTTP
    adapter; it never retries.
    """
