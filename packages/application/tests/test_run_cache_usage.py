"""A run's usage sums every turn's prompt-cache counts, as it sums the other counts, on every
twin (adr/0051); a run whose turns report none has none."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from runport.application import arun, run
from runport.contracts import ExecutionRequest, Usage
from runport.mock import AsyncEmitter, AsyncFunctionRuntime, Emitter, FunctionRuntime

CONTRACT = Path(__file__).parent / "data" / "weather.yaml"
INPUTS = {"city": "Delft"}


def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    return {"city": city, "celsius": 12.5}


def _steps(
    request: ExecutionRequest, cached: bool
) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    first = not any(m.role == "assistant" for m in request.interaction.messages)
    counts = {"cache_read_tokens": 0 if first else 1000, "cache_write_tokens": 1000 if first else 0}
    usage = ("usage", (1200, 20), counts if cached else {})
    if first:
        return [("tool_call", ("get_weather", {"city": "Delft"}), {}), usage]
    return [("text", ('{"city": "Delft", "celsius": 12.5}',), {}), usage]


def _runtimes(cached: bool) -> tuple[FunctionRuntime, AsyncFunctionRuntime]:
    def model(request: ExecutionRequest, emit: Emitter) -> None:
        for name, args, kwargs in _steps(request, cached):
            getattr(emit, name)(*args, **kwargs)

    async def amodel(request: ExecutionRequest, emit: AsyncEmitter) -> None:
        for name, args, kwargs in _steps(request, cached):
            step = getattr(emit, name)(*args, **kwargs)
            if step is not None:
                await step

    return FunctionRuntime(model), AsyncFunctionRuntime(amodel)


def test_a_runs_usage_sums_its_turns_cache_counts_on_each_twin() -> None:
    runtime, aruntime = _runtimes(cached=True)
    results = [
        run(CONTRACT, runtime, inputs=INPUTS, tools=[get_weather]),
        asyncio.run(arun(CONTRACT, aruntime, inputs=INPUTS, tools=[get_weather])),
    ]
    for result in results:
        assert [r.usage.cache_read_tokens for r in result.receipts if r.usage] == [None, 1000]
        assert result.usage == Usage(
            input_tokens=2400, output_tokens=40, cache_read_tokens=1000, cache_write_tokens=1000
        )


def test_a_run_without_cache_counts_reports_none() -> None:
    runtime, _ = _runtimes(cached=False)
    result = run(CONTRACT, runtime, inputs=INPUTS, tools=[get_weather])
    assert result.usage == Usage(input_tokens=2400, output_tokens=40)
    assert "cache" not in result.usage.model_dump_json()
