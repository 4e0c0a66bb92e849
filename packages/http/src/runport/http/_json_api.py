"""What JSON-over-HTTP providers share (OpenAI, Anthropic and Gemini alike): the headers of a
streamed and an unstreamed request, which way a response is read, and the error shape
``{"error": {"message": …}}``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["error_message", "json_headers", "reads_as_events"]


def json_headers(
    user_agent: str, credentials: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """``(streamed, unstreamed)`` request headers: a JSON body, the credentials, and an
    ``Accept`` for an event stream or a JSON answer."""
    base = {"User-Agent": user_agent, "Content-Type": "application/json", **credentials}
    return {**base, "Accept": "text/event-stream"}, {**base, "Accept": "application/json"}


def reads_as_events(stream: bool, media_type: str) -> bool:
    """Whether a response body is read as an event stream: it is read as what it says it is,
    so a server that ignores the request's ``stream`` either way is still understood, and an
    unlabelled body is read as what was asked for."""
    return media_type == "text/event-stream" or (stream and media_type != "application/json")


def error_message(body: Any) -> Any:
    """The raw ``message`` of ``{"error": {"message": …}}`` (``None`` when absent); a codec's
    ``error_text`` may return it as it is, the driver bounds and redacts it."""
    if type(body) is dict:
        error = body.get("error")
        if type(error) is dict:
            return error.get("message")
    return None
