"""An HTTP adapter's own settings, checked once at construction for both drivers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import httpx

from runport.http._codec import HTTPRequest
from runport.http._urls import checked_base_url, request_url
from runport.ports import check_byte_count, check_seconds

__all__ = ["DEFAULT_TIMEOUT", "AdapterSettings"]

DEFAULT_TIMEOUT: Final = httpx.Timeout(600.0, connect=10.0)
"""Ten minutes of silence at most, as long as a slow unstreamed completion may take to start;
ten seconds to connect. The whole call is bounded by its deadline besides."""


@dataclass(frozen=True, slots=True)
class AdapterSettings:
    base_url: httpx.URL
    timeout: httpx.Timeout | None
    max_response_bytes: int | None
    deadline: float | None

    @classmethod
    def build(
        cls,
        base_url: str,
        *,
        timeout: float | httpx.Timeout | None,
        max_response_bytes: int | None,
        deadline: float | None,
    ) -> AdapterSettings:
        return cls(
            base_url=checked_base_url(base_url),
            timeout=None if timeout is None else httpx.Timeout(timeout),
            max_response_bytes=check_byte_count(max_response_bytes),
            deadline=check_seconds(deadline),
        )

    def url_for(self, wire: HTTPRequest) -> httpx.URL:
        return request_url(self.base_url, wire.path, wire.params)

    def client_timeout(self) -> httpx.Timeout:
        return DEFAULT_TIMEOUT if self.timeout is None else self.timeout
