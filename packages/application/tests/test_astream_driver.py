"""``astream``'s driver (adr/0035): the turn is resumed by the consumer's iteration and runs
as one task of its own; a turn whose events need no waiting costs no loop round trip per
event; the turn's context stays its own."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref
from pathlib import Path

import pytest

from runport.application import _driver, astream
from runport.contracts import ExecutionRequest
from runport.mock import AsyncEmitter, AsyncFunctionRuntime

EXTRACT = Path(__file__).parent / "contract.yaml"
INPUTS = {"text": "Delft on 2024-05-01"}
WORDS = 500
MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


def test_the_turn_runs_as_one_task_that_is_not_the_consumers() -> None:
    seen: list[asyncio.Task[object] | None] = []

    async def model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        for n in range(20):
            seen.append(asyncio.current_task())
            if n % 5 == 0:
                await asyncio.sleep(0)  # a wait: the turn's own task goes on with it
            await emit.text(f"w{n} ")

    async def main() -> asyncio.Task[object] | None:
        async with astream(EXTRACT, AsyncFunctionRuntime(model), inputs=INPUTS) as events:
            async for _event in events:
                assert len({id(task) for task in seen}) == 1
        return asyncio.current_task()

    consumer = asyncio.run(main())
    assert len(seen) == 20
    assert len({id(task) for task in seen}) == 1
    assert seen[0] is not None
    assert seen[0] is not consumer


def test_a_turn_that_never_waits_costs_no_loop_round_trip_per_event() -> None:
    """A ticker task counts the loop's turns while the stream is read: the old one-slot
    hand-over took two task switches per event; the driver takes none."""

    async def model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        for n in range(WORDS):
            await emit.text(f"w{n} ")

    async def main() -> tuple[int, int]:
        ticks = 0
        stop = False

        async def ticker() -> None:
            nonlocal ticks
            while not stop:
                ticks += 1
                await asyncio.sleep(0)

        counting = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        read = 0
        async with astream(EXTRACT, AsyncFunctionRuntime(model), inputs=INPUTS) as events:
            async for _event in events:
                read += 1
        stop = True
        await counting
        return ticks, read

    ticks, read = asyncio.run(main())
    assert read == WORDS + 1  # the deltas and the Complete
    assert ticks < 10


def test_the_turns_context_is_its_own_and_lasts_the_turn() -> None:
    marks: list[str] = []

    async def model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        MARK.set("turn")
        for _ in range(3):
            await emit.text("x")
            marks.append(MARK.get())

    async def main() -> list[str]:
        outside: list[str] = []
        MARK.set("consumer")
        async with astream(EXTRACT, AsyncFunctionRuntime(model), inputs=INPUTS) as events:
            async for _event in events:
                outside.append(MARK.get())
        return outside

    outside = asyncio.run(main())
    assert set(outside) == {"consumer"}
    assert marks == ["turn", "turn", "turn"]


def test_cancelling_the_consumer_while_the_turn_waits_stops_the_turn() -> None:
    log: list[str] = []

    async def model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        await emit.text("one")
        try:
            await asyncio.Event().wait()  # an upstream that never sends more
        except asyncio.CancelledError:
            log.append("upstream closed")
            raise

    async def consume() -> None:
        async with astream(EXTRACT, AsyncFunctionRuntime(model), inputs=INPUTS) as events:
            async for _event in events:
                log.append("event")

    async def main() -> None:
        task = asyncio.ensure_future(consume())
        while "event" not in log:
            await asyncio.sleep(0)
        for _ in range(5):
            await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            log.append("consumer cancelled")

    asyncio.run(main())
    assert log == ["event", "upstream closed", "consumer cancelled"]


async def _waiting_model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
    for n in range(12):
        if n % 4 == 1:
            await asyncio.sleep(0)  # a read: the turn's task goes on with it
        await emit.text(f"w{n} ")


def test_without_asyncios_switch_of_the_running_task_the_turn_is_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where asyncio offers no switch of the running task, every step is the turn's task's:
    the same events, in order, the same envelope, the turn still its own task."""
    expected = _kinds_and_envelope()
    monkeypatch.setattr(_driver, "_swap", None)
    assert _kinds_and_envelope() == expected


def _kinds_and_envelope() -> tuple[list[str], list[str], bool, bool]:
    seen: list[asyncio.Task[object] | None] = []

    async def model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        seen.append(asyncio.current_task())
        await _waiting_model(request, emit)
        seen.append(asyncio.current_task())

    async def main() -> tuple[list[str], list[str], bool, bool]:
        texts: list[str] = []
        async with astream(EXTRACT, AsyncFunctionRuntime(model), inputs=INPUTS) as events:
            async for event in events:
                texts.append(getattr(event, "text", event.kind))
        kept = [getattr(event, "text", event.kind) for event in events.envelope.stream_events or []]
        consumer = asyncio.current_task()
        return texts, kept, seen[0] is seen[1], seen[0] is not consumer

    return asyncio.run(main())


def test_leaving_early_leaves_no_task_behind() -> None:
    """A consumer that leaves the block after two events: the turn's task has ended when the
    block is left, and no task is left to close the iterator later."""

    async def model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        for n in range(50):
            await emit.text(f"w{n} ")

    async def main() -> tuple[int, set[asyncio.Task[object]]]:
        read = 0
        async with astream(EXTRACT, AsyncFunctionRuntime(model), inputs=INPUTS) as events:
            async for _event in events:
                read += 1
                if read == 2:
                    break
        gc.collect()  # an iterator left open would now ask the loop for a task to close it
        await asyncio.sleep(0)
        return read, asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    read, left = asyncio.run(main())
    assert read == 2
    assert left == set()


def test_a_read_turn_is_freed_without_the_cyclic_collector() -> None:
    """Once the reader drops the stream, the turn's adapter (and envelope, events, task) go
    with it: nothing of the driver holds itself alive in a cycle."""

    async def model(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        for n in range(5):
            await emit.text(f"w{n} ")

    async def main() -> weakref.ref[AsyncFunctionRuntime]:
        adapter = AsyncFunctionRuntime(model)
        alive = weakref.ref(adapter)
        async with astream(EXTRACT, adapter, inputs=INPUTS) as events:
            async for _event in events:
                pass
        assert len(events.envelope.stream_events or []) == 6  # five deltas, the Complete
        del adapter, events
        return alive

    gc.collect()
    gc.disable()
    try:
        alive = asyncio.run(main())
        assert alive() is None
    finally:
        gc.enable()
