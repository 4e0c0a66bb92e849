"""The async suite on our async doubles, one class per protocol: an async scripted runtime
(``scenario``), an async chat-completions client over ``httpx.AsyncClient`` (``openai-chat``),
and the scripted runtime behind sample requests (``None``, the black-box group)."""

from __future__ import annotations

from runport.conformance import CASES, AsyncRuntimeAdapterConformance, Upstream
from runport.contracts import ExecutionRequest
from runport.core import parse_scenario
from runport.ports import AsyncRuntimeAdapter

from .conformance_doubles import AsyncMiniChatAdapter, AsyncScripted

GREETINGS = parse_scenario(
    {
        "api_version": "runport.mock/v1",
        "id": "async-black-box",
        "turns": [{"events": [{"kind": "delta", "text": "Hi"}, {"kind": "finish"}]}] * 4,
    }
)


class TestAsyncScripted(AsyncRuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncScripted(upstream.scenario)


class TestAsyncMiniChatAdapter(AsyncRuntimeAdapterConformance):
    protocol = "openai-chat"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncMiniChatAdapter(
            base_url=upstream.base_url, api_key=upstream.api_key, read_timeout=upstream.read_timeout
        )


class TestAsyncBlackBox(AsyncRuntimeAdapterConformance):
    protocol = None

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncScripted(GREETINGS)

    def sample_requests(self) -> list[ExecutionRequest]:
        return [CASES[0].request()]
