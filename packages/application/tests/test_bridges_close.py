"""A bridged adapter releases what the adapter inside holds: ``aclose_adapter`` on
``to_async(sync)`` closes the sync adapter (off the loop), ``close_adapter`` on
``to_sync(async)`` runs its ``aclose``."""

from __future__ import annotations

import asyncio
import threading

import pytest

from runport.application import aclose_adapter, close_adapter, to_async, to_sync
from runport.core import parse_scenario
from runport.mock import AsyncScriptedRuntime, ScriptedRuntime

SCENARIO = parse_scenario(
    {
        "api_version": "runport.mock/v1",
        "id": "closing",
        "turns": [{"events": [{"kind": "delta", "text": "hi"}, {"kind": "finish"}]}],
    }
)


class Holding(ScriptedRuntime):
    """A sync adapter that holds something to release, and says on which thread it was."""

    def __init__(self) -> None:
        super().__init__(SCENARIO)
        self.closed_on: list[int] = []

    def close(self) -> None:
        self.closed_on.append(threading.get_ident())


class AsyncHolding(AsyncScriptedRuntime):
    def __init__(self) -> None:
        super().__init__(SCENARIO)
        self.closed = 0

    async def aclose(self) -> None:
        await asyncio.sleep(0)
        self.closed += 1


def test_aclose_of_to_async_closes_the_sync_adapter_on_a_worker_thread() -> None:
    inner = Holding()
    bridged = to_async(inner)

    async def main() -> int:
        await aclose_adapter(bridged)
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert len(inner.closed_on) == 1
    assert inner.closed_on[0] != loop_thread


def test_close_of_to_sync_runs_the_async_adapter_s_aclose() -> None:
    inner = AsyncHolding()
    close_adapter(to_sync(inner))
    assert inner.closed == 1


def test_a_bridge_over_an_adapter_with_nothing_to_release_closes_quietly() -> None:
    asyncio.run(aclose_adapter(to_async(ScriptedRuntime(SCENARIO))))
    close_adapter(to_sync(AsyncScriptedRuntime(SCENARIO)))


def test_close_of_to_sync_inside_a_running_loop_is_the_bridge_s_usage_error() -> None:
    from runport.application import BridgeUsageError

    async def main() -> None:
        close_adapter(to_sync(AsyncHolding()))

    with pytest.raises(BridgeUsageError):
        asyncio.run(main())
