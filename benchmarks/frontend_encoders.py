"""Per-event cost of the frontend encoders beside runport's own SSE, on the same run's events.

One run's events — built once, then replayed from memory, so only the encoding is measured:
a turn of 2,000 reasoning deltas, 20,000 text deltas and a tool call in 200 fragments, its
``Complete`` and the tool's result; then an answer turn of 20,000 deltas, each followed by an
``OutputSnapshot`` of a small object (what ``partial_output`` sends), and its ``Complete``.

- ``native``  what ``runport serve``'s ``/executions`` writes per event: ``event: <kind>`` and
              the event's JSON (pydantic's ``dump_json``), framed the same way;
- ``ui``      ``ui_message_stream`` (the AI SDK's UI message stream);
- ``agui``    ``agui_stream`` (AG-UI).

All three consume the same async iterator on one event loop and join the bytes they yield.
Times are CPU time (``time.process_time``), rounds interleaved, medians reported; the bar is
``ui``/``agui`` at most 1.1× ``native`` per event. Not run in CI: timings belong to a quiet
machine, not to a test verdict.

    .venv/bin/python benchmarks/frontend_encoders.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import AsyncIterator, Callable, Sequence

from pydantic import TypeAdapter

from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    OutputSnapshot,
    ReasoningDelta,
    ReasoningPart,
    RunEvent,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    Usage,
)
from runport.server import agui_stream, ui_message_stream

_EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)
ADAPTER = AdapterDescriptor(id="bench", version="1", capabilities=["streaming", "text"])
FINGERPRINT = "0" * 64


def receipt(**fields: object) -> ExecutionReceipt:
    base: dict[str, object] = {
        "adapter": ADAPTER,
        "request_fingerprint": FINGERPRINT,
        "output_fingerprint": FINGERPRINT,
        "output_schema_valid": None,
        "usage": Usage(input_tokens=10, output_tokens=10),
    }
    return ExecutionReceipt.model_validate({**base, **fields})


def text_events() -> list[RunEvent]:
    events: list[RunEvent] = [Delta(text=f"word{i % 97} ") for i in range(20_000)]
    events.append(Complete(receipt=receipt(output="text", text="text")))
    return events


def run_events() -> list[RunEvent]:
    events: list[RunEvent] = [ReasoningDelta(text=f"think {i} ") for i in range(2_000)]
    events += [Delta(text=f"word{i % 97} ") for i in range(20_000)]
    events += [
        ToolCallDelta(
            index=0, call_id="c1", name="lookup", arguments_fragment='{"q": ' if i == 0 else "1"
        )
        for i in range(199)
    ]
    events.append(ToolCallDelta(index=0, call_id="c1", name="lookup", arguments_fragment="}"))
    events.append(
        Complete(
            receipt=receipt(
                output="text",
                text="text",
                tool_calls=[ToolCall(call_id="c1", name="lookup", arguments={"q": 1})],
                reasoning=[ReasoningPart(text="think", provider_metadata={"x": {"sig": "s"}})],
            )
        )
    )
    events.append(ToolResult(call_id="c1", name="lookup", output={"found": True}))
    value: dict[str, object] = {"items": []}
    for i in range(20_000):
        events.append(Delta(text=f'"i{i}", '))
        if i % 50 == 0:
            value = {"items": [*value["items"], f"i{i}"]}  # type: ignore[misc]
        events.append(OutputSnapshot(value=value))
    events.append(Complete(receipt=receipt(output=value, output_schema_valid=True, text="{}")))
    return events


async def replay(events: Sequence[RunEvent]) -> AsyncIterator[RunEvent]:
    for event in events:
        yield event


async def native(events: AsyncIterator[RunEvent]) -> AsyncIterator[bytes]:
    async for event in events:
        yield f"event: {event.kind}\ndata: {_EVENT.dump_json(event).decode()}\n\n".encode()


def ui(events: AsyncIterator[RunEvent]) -> AsyncIterator[bytes]:
    return ui_message_stream(events, message_id="m1")


def agui(events: AsyncIterator[RunEvent]) -> AsyncIterator[bytes]:
    return agui_stream(events, thread_id="t1", run_id="r1")


Encoder = Callable[[AsyncIterator[RunEvent]], AsyncIterator[bytes]]


async def consume(encoder: Encoder, events: Sequence[RunEvent]) -> int:
    size = 0
    async for chunk in encoder(replay(events)):
        size += len(chunk)
    return size


def measure(encoder: Encoder, events: Sequence[RunEvent]) -> tuple[float, int]:
    gc.collect()
    started = time.process_time()
    size = asyncio.run(consume(encoder, events))
    return time.process_time() - started, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    contenders: dict[str, Encoder] = {"native": native, "ui": ui, "agui": agui}
    workloads = {
        "20,000 text deltas": text_events(),
        "reasoning, text, a tool, then an answer with partial output": run_events(),
    }
    print(f"{args.rounds} rounds, median CPU time per run event")
    print("| workload | encoder | µs per event | ÷ native | bytes |")
    print("| --- | --- | --- | --- | --- |")
    for workload, events in workloads.items():
        times: dict[str, list[float]] = {name: [] for name in contenders}
        sizes: dict[str, int] = {}
        for _ in range(args.rounds):
            for name, encoder in contenders.items():
                spent, sizes[name] = measure(encoder, events)
                times[name].append(spent)
        base = statistics.median(times["native"]) / len(events)
        for name in contenders:
            per_event = statistics.median(times[name]) / len(events)
            print(
                f"| {workload} ({len(events):,} events) | {name} | {per_event * 1e6:.2f} | "
                f"{per_event / base:.2f}× | {sizes[name]:,} |"
            )


if __name__ == "__main__":
    main()
