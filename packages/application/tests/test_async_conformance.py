"""The async composites and bridges keep the law on the event loop: ``AsyncFallback`` (one
member, and a first member that is down), ``to_async`` over sync adapters (a scripted one and
the OpenAI adapter over real HTTP), and ``to_sync`` over ``AsyncOpenAIChatAdapter``."""

from __future__ import annotations

from runport.application import AsyncFallback, to_async, to_sync
from runport.conformance import (
    AsyncRuntimeAdapterConformance,
    RuntimeAdapterConformance,
    Upstream,
)
from runport.contracts import ExecutionRequest
from runport.mock import AsyncEmitter, AsyncFunctionRuntime, AsyncScriptedRuntime, ScriptedRuntime
from runport.openai import AsyncOpenAIChatAdapter, OpenAIChatAdapter
from runport.ports import AsyncRuntimeAdapter, PortError, RuntimeAdapter


async def always_unavailable(request: ExecutionRequest, emit: AsyncEmitter) -> None:
    raise PortError("TQX_RUNTIME_UNAVAILABLE", "this member is down")


class TestAsyncFallbackOfOneAsync(AsyncRuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncFallback([AsyncScriptedRuntime(upstream.scenario)])


class TestAsyncFallbackOfTwo(AsyncRuntimeAdapterConformance):
    """Every call fails over from a member that is down before it shows anything; the
    caller must never see that member's ``Failed``."""

    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return AsyncFallback(
            [AsyncFunctionRuntime(always_unavailable), AsyncScriptedRuntime(upstream.scenario)]
        )


class TestToAsyncScriptedRuntime(AsyncRuntimeAdapterConformance):
    protocol = "scenario"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return to_async(ScriptedRuntime(upstream.scenario))


class TestToAsyncOpenAIChatAdapter(AsyncRuntimeAdapterConformance):
    """A sync HTTP adapter on a worker thread: cancelling the task must still close the
    upstream and stop the stream."""

    protocol = "openai-chat"

    def make_adapter(self, upstream: Upstream) -> AsyncRuntimeAdapter:
        return to_async(
            OpenAIChatAdapter(
                base_url=upstream.base_url,
                model=upstream.model,
                api_key=upstream.api_key,
                timeout=upstream.read_timeout,
            )
        )


class TestToSyncAsyncOpenAIChatAdapter(RuntimeAdapterConformance):
    protocol = "openai-chat"

    def make_adapter(self, upstream: Upstream) -> RuntimeAdapter:
        return to_sync(
            AsyncOpenAIChatAdapter(
                base_url=upstream.base_url,
                model=upstream.model,
                api_key=upstream.api_key,
                timeout=upstream.read_timeout,
            )
        )
