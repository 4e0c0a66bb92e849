"""``AsyncOpenAIChatAdapter`` passes the async conformance suite on the ``openai-chat``
protocol, over real HTTP to the suite's loopback upstream."""

from __future__ import annotations

from runport.conformance import AsyncRuntimeAdapterConformance, Upstream
from runport.openai import AsyncOpenAIChatAdapter
from runport.ports import AsyncRuntimeAdapter


class TestAsyncOpenAIChatAdapter(AsyncRuntimeAdapterConformance):
    protocol = "openai-chat"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncOpenAIChatAdapter(
            base_url=upstream.base_url,
            model=upstream.model,
            api_key=upstream.api_key,
            timeout=upstream.read_timeout,
        )


class TestAsyncOpenAIChatAdapterOnAiohttp(AsyncRuntimeAdapterConformance):
    """The same adapter on aiohttp's connections (``transport="aiohttp"``): the whole suite,
    caller stops and deadlines included, on the transport the ``aiohttp`` extra adds."""

    protocol = "openai-chat"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncOpenAIChatAdapter(
            base_url=upstream.base_url,
            model=upstream.model,
            api_key=upstream.api_key,
            timeout=upstream.read_timeout,
            transport="aiohttp",
        )
