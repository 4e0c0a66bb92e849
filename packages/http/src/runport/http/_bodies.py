"""The shape JSON providers share for an error (OpenAI, Anthropic and Gemini all answer
``{"error": {"message": …, …}}``), read once for every codec."""

from __future__ import annotations

from typing import Any

__all__ = ["error_message"]


def error_message(body: Any) -> Any:
    """The raw ``message`` of ``{"error": {"message": …}}`` (``None`` when absent); a codec's
    ``error_text`` may return it as it is, the driver bounds and redacts it."""
    if type(body) is dict:
        error = body.get("error")
        if type(error) is dict:
            return error.get("message")
    return None
