"""The async test doubles: ``AsyncScriptedRuntime`` and ``AsyncFunctionRuntime``.

They play turns through the same ``Turn`` and ``ScenarioPlayer`` as their sync twins, so the
same scenario or handler gives the same events and byte-identical receipts; only delivery
differs (each event is handed to the sink and awaited when the sink returns an awaitable).
Cancellation needs no upstream to close: the call stops at the await it was in, sends
nothing more, and the runtime stays usable.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from pydantic import JsonValue

from runport.contracts import (
    CitationSource,
    ExecutionReceipt,
    ExecutionRequest,
    Finish,
    StreamEvent,
)
from runport.mock._function import EmitterCore, FunctionDouble, ended
from runport.mock._scripted import ScenarioDouble
from runport.mock._turn import UNSET, Turn, discard
from runport.ports import AsyncRuntimeAdapter, AsyncSink, deliver

__all__ = [
    "AsyncEmitter",
    "AsyncFunctionRuntime",
    "AsyncHandler",
    "AsyncScriptedRuntime",
]


class AsyncScriptedRuntime(ScenarioDouble, AsyncRuntimeAdapter):
    """``ScriptedRuntime`` on the event loop: same scenarios, same virtual clock, same
    receipts."""

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._player.play(request, discard)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        turn, events = self._player.start(request)
        try:
            for event in events:
                # ``deliver``, inlined: a plain sink (or a driver taking the event at once)
                # costs no coroutine per event, and an awaitable type (a coroutine, a
                # driver's hand-over) is told by its ``__await__`` before the ABC check
                result = sink(event)
                if result is not None and (
                    hasattr(type(result), "__await__") or inspect.isawaitable(result)
                ):
                    await result
        finally:
            self._player.counters.add_time(turn)
        return self._player.outcome(turn)


class AsyncEmitter(EmitterCore):
    """``Emitter`` for an async handler: the methods that send an event are awaited."""

    def __init__(self, turn: Turn, sink: AsyncSink) -> None:
        super().__init__(turn)
        self._sink = sink

    async def text(self, text: str) -> None:
        """A piece of the answer's text (one ``Delta``)."""
        await self.send(self.turn.text(text))

    async def reasoning(self, text: str, *, signature: str | None = None) -> None:
        """A piece of the model's reasoning (see ``Emitter.reasoning``)."""
        await self.send(self.turn.reasoning(text, signature=signature))

    async def tool_call_fragment(
        self,
        index: int,
        arguments_fragment: str,
        *,
        call_id: str | None = None,
        name: str | None = None,
    ) -> None:
        """A piece of tool call ``index``'s arguments (see ``Emitter.tool_call_fragment``)."""
        await self.send(self.turn.fragment(index, arguments_fragment, call_id=call_id, name=name))

    async def tool_call(
        self, name: str, arguments: JsonValue, *, call_id: str | None = None
    ) -> None:
        """A whole tool call at the next index, its arguments sent as one fragment."""
        await self.send(self.turn.tool_call(name, arguments, call_id=call_id))

    async def server_tool_call(
        self,
        name: str,
        input: JsonValue = None,
        *,
        call_id: str | None = None,
        provider_metadata: dict[str, JsonValue] | None = None,
    ) -> None:
        """A tool the provider runs itself is announced (see ``Emitter.server_tool_call``)."""
        await self.send(
            self.turn.server_call(name, input, call_id=call_id, provider_metadata=provider_metadata)
        )

    async def server_tool_result(
        self,
        call_id: str,
        output: JsonValue = None,
        *,
        error: str | None = None,
        provider_metadata: dict[str, JsonValue] | None = None,
    ) -> None:
        """What a server tool returned (see ``Emitter.server_tool_result``)."""
        await self.send(
            self.turn.server_result(
                call_id, output, error=error, provider_metadata=provider_metadata
            )
        )

    async def citation(
        self,
        source: str | CitationSource,
        *,
        title: str | None = None,
        cited_text: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> None:
        """A source the answer cites (see ``Emitter.citation``)."""
        await self.send(
            self.turn.citation(source, title=title, cited_text=cited_text, start=start, end=end)
        )

    async def file(self, media_type: str, data: bytes | str, *, partial: bool = False) -> None:
        """A file the model generated (see ``Emitter.file``)."""
        await self.send(self.turn.file(media_type, data, partial=partial))

    def usage(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        reasoning_tokens: int | None = None,
        *,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
    ) -> None:
        """Token counts, summed over the turn (``cache_read_tokens`` and
        ``cache_write_tokens``: of the input, those read from and written to the prompt
        cache). Nothing is sent, so nothing to await."""
        self.turn.usage(
            input_tokens,
            output_tokens,
            reasoning_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
        )

    def delay(self, ms: int) -> None:
        """Advance the virtual clock; never sleeps."""
        self.turn.delay(ms)

    async def finish(
        self,
        finish_reason: str | None = None,
        *,
        output: JsonValue = UNSET,
        finish: Finish | None = None,
    ) -> None:
        """End the turn (see ``Emitter.finish``: ``finish`` names runport's word for a
        provider's own ``finish_reason``)."""
        reason, word = ended(finish_reason, finish)
        await self.send(self.turn.finish(reason, output=output, finish=word))

    async def send(self, event: StreamEvent) -> None:
        if self.stopped is not None:
            raise self.stopped
        try:
            await deliver(self._sink, event)
        except BaseException as error:
            self.stopped = error
            raise
        self.after(event)


AsyncHandler = Callable[[ExecutionRequest, AsyncEmitter], Awaitable[None]]


class AsyncFunctionRuntime(FunctionDouble[AsyncHandler], AsyncRuntimeAdapter):
    """``FunctionRuntime`` on the event loop: ``async def handler(request, emit)``."""

    async def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return await self.execute_streaming(request, discard)

    async def execute_streaming(
        self, request: ExecutionRequest, sink: AsyncSink
    ) -> ExecutionReceipt:
        turn = self.open_turn(request)
        emit = AsyncEmitter(turn, sink)
        if turn.refused is not None:
            await emit.send(turn.refused)
        try:
            try:
                await self._handler(request, emit)
            except Exception as error:
                await emit.send(emit.raised(error))
            ending = emit.returned()
            if ending is not None:
                await emit.send(ending)
        finally:
            self._counters.add_time(turn)
        return turn.receipt()
