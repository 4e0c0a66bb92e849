"""Sub-runs (docs/runs.md, "Sub-runs"): a contract run as another run's tool.

The tool's function is a generator (so the run shows what it yields, as it does for any tool
with progress): on a sync adapter it runs the contract with ``run_stream`` in a worker thread
of its own, in a copy of the caller's context one level deeper, and yields each of the
sub-run's events as it arrives, wrapped in ``Nested`` — the parent's round makes each a
``SubRunEvent`` under the call's id. Its return value is the sub-run's ``RunResult``, whose
output the model reads and whose usage the parent adds to its own. On an async adapter it is
an async generator over ``astream_run`` (no thread: the parent's driver awaits each step), and
its last yield is the ``RunResult``. Stopping the generator (the parent's caller stopped,
or its deadline passed) makes the sub-run's next event raise, which ends it
``TQX_CALLER_STOPPED``; the worker is waited for before the generator closes.
"""

from __future__ import annotations

import contextvars
import queue
import re
import threading
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runport.application._result import RunResult
from runport.contracts import ErrorCode, RunEvent
from runport.ports import AsyncRuntimeAdapter, PortError, RuntimeAdapter

if TYPE_CHECKING:
    from runport.application._contract import ContractSource
    from runport.application._options import RunOptions

__all__ = ["Nested", "subrun_function", "tool_name"]

_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("runport_subrun_depth", default=0)
"""How many sub-runs the current code runs inside (0: none; a top-level run)."""

_NAME_CHARACTER = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class Nested:
    """What a sub-run's generator yields: one of the sub-run's events."""

    event: RunEvent


class _ParentGone(Exception):
    """Raised into the sub-run by its event handler once its parent no longer reads."""


def tool_name(contract_id: str) -> str:
    """A tool name every provider takes (``[A-Za-z0-9_-]{1,64}``) from a contract id."""
    return _NAME_CHARACTER.sub("_", contract_id)[:64] or "contract"


def subrun_function(
    contract: ContractSource,
    adapter: RuntimeAdapter | AsyncRuntimeAdapter,
    max_depth: int,
    options: RunOptions,
) -> Callable[..., Generator[Nested, None, RunResult] | AsyncGenerator[Nested | RunResult, None]]:
    """The function of a tool that runs ``contract`` on ``adapter`` with the call's arguments
    as its inputs: a generator over a worker thread for a sync adapter, an async generator
    over ``astream_run`` for an async one (its last yield the ``RunResult``)."""
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"max_depth must be an integer of at least 1, not {max_depth!r}")

    def deeper() -> int:
        depth = _DEPTH.get() + 1
        if depth > max_depth:
            raise PortError(
                ErrorCode.SUBRUN_TOO_DEEP,
                f"a sub-run {depth} deep passes max_depth={max_depth}: nothing was run",
            )
        return depth

    if isinstance(adapter, AsyncRuntimeAdapter):
        on_loop = adapter

        def asubrun(**inputs: Any) -> AsyncGenerator[Nested | RunResult, None]:
            return _pulled(contract, on_loop, inputs, options, deeper())

        return asubrun

    def subrun(**inputs: Any) -> Generator[Nested, None, RunResult]:
        return _streamed(contract, adapter, inputs, options, deeper())

    return subrun


async def _pulled(
    contract: ContractSource,
    adapter: AsyncRuntimeAdapter,
    inputs: Mapping[str, Any],
    options: RunOptions,
    depth: int,
) -> AsyncGenerator[Nested | RunResult, None]:
    from runport.application._astream import astream_run

    outer = _DEPTH.set(depth)  # the stream's task copies this context as it is made
    try:
        stream = astream_run(contract, adapter, inputs=inputs, **options)
    finally:
        _DEPTH.reset(outer)
    async with stream as events:
        async for event in events:
            yield Nested(event)
        result = events.result
    yield _settled(result)  # the run's result: read as the call's, shown as no progress


def _settled(result: RunResult) -> RunResult:
    if result.status == "paused":
        raise PortError(
            ErrorCode.TOOL_FAILED,
            "the sub-run paused for a person's approval, which a sub-run cannot ask",
        )
    return result


def _streamed(
    contract: ContractSource,
    adapter: RuntimeAdapter,
    inputs: Mapping[str, Any],
    options: RunOptions,
    depth: int,
) -> Generator[Nested, None, RunResult]:
    from runport.application._run import run_stream

    arrived: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    gone = threading.Event()

    def on_event(event: RunEvent) -> None:
        if gone.is_set():
            raise _ParentGone("the parent run stopped reading")
        arrived.put(("event", event))

    def work() -> None:
        _DEPTH.set(depth)
        try:
            result = run_stream(contract, adapter, inputs=inputs, on_event=on_event, **options)
        except BaseException as error:
            arrived.put(("error", error))
        else:
            arrived.put(("done", result))

    worker = threading.Thread(
        target=contextvars.copy_context().run, args=(work,), name="runport-subrun", daemon=True
    )
    worker.start()
    try:
        while True:
            kind, value = arrived.get()
            if kind == "event":
                yield Nested(value)
            elif kind == "error":
                raise value
            else:
                return _settled(value)
    finally:
        gone.set()
        worker.join()
