"""Our adapters pass the whole suite: the execute-only default method (``scenario``) and the
minimal chat-completions client the other tests break on purpose (``openai-chat``)."""

from __future__ import annotations

from runport.conformance import RuntimeAdapterConformance, Upstream
from runport.ports import RuntimeAdapter

from .conformance_doubles import ExecuteOnly, MiniChatAdapter


class TestExecuteOnly(RuntimeAdapterConformance):
    """No streaming of its own: ``RuntimeAdapter.execute_streaming``'s default carries it."""

    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return ExecuteOnly(upstream.scenario)


class TestMiniChatAdapter(RuntimeAdapterConformance):
    protocol = "openai-chat"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return MiniChatAdapter(
            base_url=upstream.base_url, api_key=upstream.api_key, read_timeout=upstream.read_timeout
        )
