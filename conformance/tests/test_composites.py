"""A composite adapter (capability ``composite``) passes the whole suite with one member and
with two, on both protocols: law 7 checks the composite rules instead of one request per
call, and every turn a member tries is the call's own."""

from __future__ import annotations

from runport.conformance import RuntimeAdapterConformance, Upstream
from runport.mock import ScriptedRuntime
from runport.ports import RuntimeAdapter

from .conformance_doubles import MiniChatAdapter, MiniFallback


class TestFallbackOfOne(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return MiniFallback([ScriptedRuntime(upstream.scenario)])


class TestFallbackOfTwo(RuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return MiniFallback([ScriptedRuntime(upstream.scenario) for _ in range(2)])


class TestFallbackOfTwoClients(RuntimeAdapterConformance):
    protocol = "openai-chat"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return MiniFallback(
            [
                MiniChatAdapter(
                    base_url=upstream.base_url,
                    api_key=upstream.api_key,
                    read_timeout=upstream.read_timeout,
                )
                for _ in range(2)
            ]
        )
