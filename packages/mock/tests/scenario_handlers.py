"""Handlers that say, call by call, what a scenario's turns say — for running the function
runtimes through the conformance suite, which scripts its upstream as a scenario."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from typing import Any

from runport.contracts import ExecutionRequest
from runport.core import (
    CitationEvent,
    DelayEvent,
    DeltaEvent,
    FailEvent,
    FileDeltaEvent,
    FinishEvent,
    ReasoningDeltaEvent,
    Scenario,
    ServerToolCallEvent,
    ServerToolResultEvent,
    ToolCallDeltaEvent,
    UsageEvent,
)
from runport.mock import AsyncEmitter, Emitter
from runport.ports import PortError


def _turns(scenario: Scenario) -> Iterator[Any]:
    """Each call's events, in call order."""
    return iter([turn.events for turn in scenario.turns])


def say(event: Any, emit: Emitter | AsyncEmitter) -> Any:
    """One scenario event through the emitter; what the emitter returned (an awaitable, for
    an async emitter's sending methods)."""
    if isinstance(event, DeltaEvent):
        return emit.text(event.text)
    if isinstance(event, ReasoningDeltaEvent):
        return emit.reasoning(event.text, signature=event.signature)
    if isinstance(event, ToolCallDeltaEvent):
        return emit.tool_call_fragment(
            event.index, event.arguments_fragment, call_id=event.call_id, name=event.name
        )
    if isinstance(event, UsageEvent):
        return emit.usage(
            event.input_tokens,
            event.output_tokens,
            event.reasoning_tokens,
            cache_read_tokens=event.cache_read_tokens,
            cache_write_tokens=event.cache_write_tokens,
        )
    if isinstance(event, ServerToolCallEvent):
        return emit.server_tool_call(
            event.name,
            event.input,
            call_id=event.call_id,
            provider_metadata=event.provider_metadata,
        )
    if isinstance(event, ServerToolResultEvent):
        return emit.server_tool_result(
            event.call_id,
            event.output,
            error=event.error,
            provider_metadata=event.provider_metadata,
        )
    if isinstance(event, CitationEvent):
        return emit.citation(
            event.source, cited_text=event.cited_text, start=event.start, end=event.end
        )
    if isinstance(event, FileDeltaEvent):
        return emit.file(event.media_type, event.data, partial=event.partial)
    if isinstance(event, DelayEvent):
        return emit.delay(event.ms)
    if isinstance(event, FinishEvent):
        return emit.finish(event.finish_reason)
    assert isinstance(event, FailEvent)
    raise PortError(event.code, event.message, retry_after_ms=event.retry_after_ms)


def scenario_handler(scenario: Scenario) -> Any:
    turns = _turns(scenario)
    lock = threading.Lock()

    def handler(request: ExecutionRequest, emit: Emitter) -> None:
        with lock:
            events = next(turns)
        for event in events:
            say(event, emit)

    return handler


def async_scenario_handler(scenario: Scenario) -> Any:
    turns = _turns(scenario)

    async def handler(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        for event in next(turns):
            said = say(event, emit)
            if inspect.isawaitable(said):
                await said

    return handler
