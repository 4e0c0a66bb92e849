"""What ``runport.otel.Traced`` costs: per delta on a long stream, and per call.

Three contenders play identical scripted turns through ``runport.mock.ScriptedRuntime`` (no
network, no sleeps, so the adapter's own work is all there is to measure — which makes the
decorator's share as large as it can ever look; a real upstream's parsing and I/O dilute it):

- ``plain``        the runtime, untraced;
- ``traced``       ``Traced(runtime)`` recording to the SDK: a span through a
                   ``SimpleSpanProcessor`` into an in-memory exporter, histograms into an
                   in-memory reader;
- ``no-op``        ``Traced(runtime)`` with no SDK configured (the API's no-op providers), what a
                   library user pays before anyone turns telemetry on.

Workloads: one streamed turn of 20,000 text deltas (per-delta cost; target traced ÷ plain ≤
1.10), and 2,000 one-delta calls, streamed and unstreamed (per-call overhead, in µs).

Repetitions are interleaved (each round runs every contender once) and the median is reported,
so drift in machine load hits all contenders alike; time is the process's CPU time, so other
processes sharing the cores do not count (everything measured runs on this thread). A last
line gives the SDK's own cost for the same span and points with no runport code around them.
Not run in CI: timings belong to a quiet machine, not to a test verdict.

    .venv/bin/python benchmarks/otel_overhead.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from runport.contracts import ExecutionRequest, StreamEvent
from runport.core import Scenario, compile_contract, load_contract, parse_scenario
from runport.mock import ScriptedRuntime
from runport.otel import Traced
from runport.ports import RuntimeAdapter

DELTAS = 20_000
CALLS = 2_000
WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]
QUICKSTART = Path(__file__).resolve().parent.parent / "examples" / "quickstart"
# The quickstart's own contract, without its 4 KiB response bound (20,000 deltas pass it).
_COMPILED = compile_contract(
    load_contract(QUICKSTART / "contract.yaml"), inputs={"topic": "rivers"}
)
REQUEST = ExecutionRequest(interaction=_COMPILED.model_copy(update={"runtime_policy": {}}))


def scenario(turns: int, deltas: int) -> Scenario:
    events: list[dict[str, Any]] = [
        {"kind": "delta", "text": WORDS[n % len(WORDS)]} for n in range(deltas)
    ]
    events.append({"kind": "usage", "input_tokens": 12, "output_tokens": deltas})
    events.append({"kind": "finish", "finish_reason": "stop"})
    return parse_scenario(
        {
            "api_version": "runport.mock/v1",
            "id": "bench",
            "turns": [{"events": events} for _ in range(turns)],
        }
    )


class Pipeline:
    """An SDK that records everything and keeps it in memory, emptied between rounds."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def clear(self) -> None:
        self.spans.clear()
        self.reader.get_metrics_data()


def sdk_floor(pipeline: Pipeline, calls: int) -> float:
    """The SDK's own cost for what one traced streamed call records — a span with the same
    attributes and four histogram points — with no runport code around it (µs per call)."""
    tracer = pipeline.tracer_provider.get_tracer("floor")
    meter = pipeline.meter_provider.get_meter("floor")
    duration, first, tokens = (meter.create_histogram(name) for name in ("d", "f", "t"))
    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "p",
        "gen_ai.request.model": "m",
    }
    inputs, outputs = (
        {**common, "gen_ai.token.type": "input"},
        {**common, "gen_ai.token.type": "output"},
    )
    done = {
        "runport.request_fingerprint": "0" * 64,
        "runport.output_fingerprint": "1" * 64,
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 1,
    }
    gc.collect()
    start = time.process_time()
    for _ in range(calls):
        span = tracer.start_span("chat m", kind=trace.SpanKind.CLIENT, attributes=common)
        span.set_attributes(done)
        duration.record(0.1, common)
        first.record(0.05, common)
        tokens.record(12, inputs)
        tokens.record(1, outputs)
        span.end()
    return (time.process_time() - start) / calls * 1e6


def contenders(pipeline: Pipeline) -> dict[str, Callable[[ScriptedRuntime], RuntimeAdapter]]:
    # "no-op" measures the API with nothing configured: no global SDK may be installed.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    return {
        "plain": lambda runtime: runtime,
        "traced": lambda runtime: Traced(
            runtime,
            tracer_provider=pipeline.tracer_provider,
            meter_provider=pipeline.meter_provider,
        ),
        "no-op": lambda runtime: Traced(runtime),
    }


def counting() -> Callable[[StreamEvent], None]:
    count = 0

    def sink(event: StreamEvent) -> None:
        nonlocal count
        count += 1

    return sink


def stream(adapter: RuntimeAdapter, calls: int) -> None:
    for _ in range(calls):
        adapter.execute_streaming(REQUEST, counting())


def execute(adapter: RuntimeAdapter, calls: int) -> None:
    for _ in range(calls):
        adapter.execute(REQUEST)


def timed(
    play: Callable[[RuntimeAdapter, int], None],
    wrap: Callable[[ScriptedRuntime], RuntimeAdapter],
    script: Scenario,
    calls: int,
) -> float:
    adapter = wrap(ScriptedRuntime(script))
    gc.collect()
    start = time.process_time()
    play(adapter, calls)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    pipeline = Pipeline()
    wraps = contenders(pipeline)
    names = list(wraps)
    workloads: list[tuple[str, Callable[[RuntimeAdapter, int], None], Scenario, int, int]] = [
        (f"{DELTAS:,} deltas, streamed", stream, scenario(1, DELTAS), 1, DELTAS),
        (f"{CALLS:,} calls of 1 delta, streamed", stream, scenario(CALLS, 1), CALLS, CALLS),
        (f"{CALLS:,} calls of 1 delta, execute", execute, scenario(CALLS, 1), CALLS, CALLS),
    ]
    print(f"rounds: {args.rounds}; median µs per delta (first row) or per call (others)")
    print()
    print(
        "| workload | " + " | ".join(names) + " | traced ÷ plain | no-op ÷ plain | traced − plain |"
    )
    print("|---" * (len(names) + 4) + "|")
    for label, play, script, calls, unit in workloads:
        for name in names:  # warm-up
            timed(play, wraps[name], script, calls)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(args.rounds):
            for name in names:
                pipeline.clear()
                samples[name].append(timed(play, wraps[name], script, calls))
        micros = {name: statistics.median(samples[name]) / unit * 1e6 for name in names}
        cells = " | ".join(f"{micros[name]:.2f}" for name in names)
        print(
            f"| {label} | {cells} | {micros['traced'] / micros['plain']:.3f}× | "
            f"{micros['no-op'] / micros['plain']:.3f}× | "
            f"{micros['traced'] - micros['plain']:+.2f} µs |"
        )
    sdk_floor(pipeline, CALLS)  # warm-up
    floors = []
    for _ in range(args.rounds):
        pipeline.clear()
        floors.append(sdk_floor(pipeline, CALLS))
    print()
    print(
        f"SDK floor: {statistics.median(floors):.2f} µs per call for the span and the four "
        "histogram points alone, with no runport code (of the traced − plain above)."
    )


if __name__ == "__main__":
    main()
