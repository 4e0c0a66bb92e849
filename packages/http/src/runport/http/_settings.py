"""An HTTP adapter's own settings, checked once at construction for both drivers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import httpx

from runport.contracts import AdapterDescriptor
from runport.http._codec import Codec, HTTPRequest
from runport.http._exchange import BASE_HEADERS, Exchange
from runport.http._urls import checked_base_url, redact_url, request_url
from runport.ports import check_byte_count, check_seconds

__all__ = ["DEFAULT_TIMEOUT", "AdapterSettings", "CodecCarrier"]

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

    def http_request(
        self, client: httpx.Client | httpx.AsyncClient, wire: HTTPRequest, exchange: Exchange
    ) -> httpx.Request:
        """The codec's request on ``client``, its timeouts cut to the call's deadline (a
        client passed in without an adapter ``timeout`` keeps its own)."""
        base = self.timeout if self.timeout is not None else client.timeout
        return client.build_request(
            wire.method,
            request_url(self.base_url, wire.path, wire.params),
            content=wire.body,
            headers={**BASE_HEADERS, **wire.headers},
            timeout=exchange.timeout(base),
        )

    def client_timeout(self) -> httpx.Timeout:
        return DEFAULT_TIMEOUT if self.timeout is None else self.timeout


class CodecCarrier:
    """What both drivers hold and show: the codec, the checked settings, the descriptor and a
    repr without credentials."""

    def _carry(
        self,
        codec: Codec,
        base_url: str,
        *,
        timeout: float | httpx.Timeout | None,
        max_response_bytes: int | None,
        deadline: float | None,
    ) -> None:
        self._codec = codec
        self._settings = AdapterSettings.build(
            base_url, timeout=timeout, max_response_bytes=max_response_bytes, deadline=deadline
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={redact_url(self._settings.base_url)!r})"

    def descriptor(self) -> AdapterDescriptor:
        return self._codec.descriptor()
