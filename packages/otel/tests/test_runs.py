"""``RunTracer`` (docs/observability.md): each run is an ``invoke_agent`` span, with the
``chat`` span of every model attempt and the ``execute_tool`` span of every tool call under it,
and its retries and correction rounds as events — the same tree for ``run``, ``run_stream``,
``arun`` and ``arun_stream``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

from runport.application import RunError, arun, arun_stream, define_contract, run, run_stream
from runport.core import parse_scenario
from runport.mock import AsyncScriptedRuntime, ScriptedRuntime
from runport.otel import RunTracer, Traced

from .otel_doubles import Recorded


class Forecast(BaseModel):
    city: str
    rain_mm: float


def rain_today(city: str) -> float:
    """Millimetres of rain expected in a city today."""
    return 3.5


CONTRACT = define_contract(
    "forecast.rain",
    user="How much rain in {{ inputs.city }} today? Answer in JSON.",
    inputs={"city": str},
    output=Forecast,
    version="2.1.0",
)

TOOL_TURN = [
    {
        "kind": "tool_call_delta",
        "index": 0,
        "call_id": "call_7",
        "name": "rain_today",
        "arguments_fragment": '{"city": "Ghent"}',
    },
    {"kind": "usage", "input_tokens": 20, "output_tokens": 5},
    {"kind": "finish", "finish_reason": "tool_calls"},
]


def answer(text: str) -> list[dict[str, Any]]:
    return [
        {"kind": "delta", "text": text},
        {"kind": "usage", "input_tokens": 30, "output_tokens": 7},
        {"kind": "finish", "finish_reason": "stop"},
    ]


# A reset before anything arrived (retried), the tool turn, an answer that misses a field
# (one correction round), then the answer.
TURNS = [
    [{"kind": "fail", "code": "TQX_RUNTIME_UNAVAILABLE", "message": "reset"}],
    TOOL_TURN,
    answer('{"city": "Ghent"}'),
    answer('{"city": "Ghent", "rain_mm": 3.5}'),
]


def scenario(turns: Sequence[list[dict[str, Any]]]) -> Any:
    return parse_scenario(
        {
            "api_version": "runport.mock/v1",
            "id": "rainy",
            "turns": [{"events": events} for events in turns],
        }
    )


async def no_wait(seconds: float) -> None:
    return None


def play(
    way: str, recorded: Recorded, turns: Sequence[list[dict[str, Any]]], **options: Any
) -> Any:
    tracing = {"tracer_provider": recorded.tracer_provider}
    common: dict[str, Any] = {
        "inputs": {"city": "Ghent"},
        "tools": [rain_today],
        "observer": RunTracer(**tracing),
        "random": lambda: 0.5,
        **options,
    }
    on_event = common.pop("on_event", lambda event: None)
    if way in ("run", "run_stream"):
        runtime = Traced(ScriptedRuntime(scenario(turns)), **tracing)
        common.setdefault("sleep", lambda seconds: None)
        if way == "run":
            return run(CONTRACT, runtime, **common)
        return run_stream(CONTRACT, runtime, on_event=on_event, **common)
    aruntime = Traced(AsyncScriptedRuntime(scenario(turns)), **tracing)
    common.setdefault("sleep", no_wait)
    if way == "arun":
        return asyncio.run(arun(CONTRACT, aruntime, **common))
    return asyncio.run(arun_stream(CONTRACT, aruntime, on_event=on_event, **common))


def tree(spans: Sequence[ReadableSpan]) -> list[tuple[str, str | None]]:
    """Each span's name and its parent's name, in the order they started."""
    names = {span.context.span_id: span.name for span in spans}
    ordered = sorted(spans, key=lambda span: span.start_time or 0)
    return [
        (span.name, None if span.parent is None else names.get(span.parent.span_id, "?"))
        for span in ordered
    ]


def by_name(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


WAYS = ["run", "run_stream", "arun", "arun_stream"]


@pytest.mark.parametrize("way", WAYS)
def test_a_run_is_one_invoke_agent_span_over_its_turns_and_tools(
    way: str, recorded: Recorded
) -> None:
    result = play(way, recorded, TURNS)
    assert result.output == {"city": "Ghent", "rain_mm": 3.5}
    spans = recorded.spans.get_finished_spans()
    root = "invoke_agent forecast.rain"
    assert tree(spans) == [
        (root, None),
        ("chat rainy", root),  # the attempt that was reset
        ("chat rainy", root),  # its retry: the tool turn
        ("execute_tool rain_today", root),
        ("chat rainy", root),  # the answer that failed the schema
        ("chat rainy", root),  # the corrected answer
    ]
    [run_span] = by_name(spans, root)
    assert run_span.kind is SpanKind.INTERNAL
    assert run_span.status.status_code is StatusCode.UNSET
    assert dict(run_span.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "forecast.rain",
        "gen_ai.provider.name": "runport.mock",
        "gen_ai.request.model": "rainy",
        "runport.contract_version": "2.1.0",
        "runport.streamed": way.endswith("_stream"),
        "gen_ai.usage.input_tokens": 80,
        "gen_ai.usage.output_tokens": 19,
        "runport.turns": 3,
        "runport.retries": 1,
        "runport.corrections": 1,
    }
    assert [(event.name, dict(event.attributes or {})) for event in run_span.events] == [
        (
            "runport.retry",
            {
                "runport.retry.attempt": 1,
                "error.type": "TQX_RUNTIME_UNAVAILABLE",
                "runport.retry.wait": 0.25,
            },
        ),
        (
            "runport.correction",
            {
                "runport.correction.round": 1,
                "runport.correction.stage": "output",
                "runport.correction.details": ("TQX_OUTPUT_SCHEMA",),
            },
        ),
    ]
    [tool] = by_name(spans, "execute_tool rain_today")
    assert tool.kind is SpanKind.INTERNAL
    assert dict(tool.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "rain_today",
        "gen_ai.tool.call.id": "call_7",
        "gen_ai.tool.type": "function",
    }
    reset = sorted(by_name(spans, "chat rainy"), key=lambda span: span.start_time or 0)[0]
    assert reset.attributes is not None
    assert reset.attributes["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
    assert {span.context.trace_id for span in spans} == {run_span.context.trace_id}


@pytest.mark.parametrize("way", ["run", "arun_stream"])
def test_a_tool_that_raises_fails_its_span_and_the_run(way: str, recorded: Recorded) -> None:
    def rain_today(city: str) -> float:
        raise ConnectionError(city)

    with pytest.raises(RunError, match="rain_today"):
        play(way, recorded, TURNS[1:], tools=[rain_today])
    spans = recorded.spans.get_finished_spans()
    [tool] = by_name(spans, "execute_tool rain_today")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes is not None
    assert tool.attributes["error.type"] == "ConnectionError"
    [run_span] = by_name(spans, "invoke_agent forecast.rain")
    assert run_span.status.status_code is StatusCode.ERROR
    assert run_span.attributes is not None
    assert run_span.attributes["error.type"] == "TQX_TOOL_FAILED"
    assert "gen_ai.usage.input_tokens" not in run_span.attributes


def test_a_caller_stop_is_not_the_run_s_failure(recorded: Recorded) -> None:
    def stop(event: Any) -> None:
        raise RuntimeError("enough")

    with pytest.raises(RunError) as raised:
        play("run_stream", recorded, [answer('{"city": "Ghent", "rain_mm": 1}')], on_event=stop)
    assert raised.value.code == "TQX_CALLER_STOPPED"
    [run_span] = by_name(recorded.spans.get_finished_spans(), "invoke_agent forecast.rain")
    assert run_span.status.status_code is StatusCode.UNSET
    assert run_span.attributes is not None
    assert run_span.attributes["runport.caller_stopped"] is True
    assert "error.type" not in run_span.attributes


def test_concurrent_runs_each_get_their_own_tree(recorded: Recorded) -> None:
    tracing = {"tracer_provider": recorded.tracer_provider}
    tracer = RunTracer(**tracing)

    async def one() -> Any:
        runtime = Traced(AsyncScriptedRuntime(scenario(TURNS[1:])), **tracing)
        return await arun(
            CONTRACT, runtime, inputs={"city": "Ghent"}, tools=[rain_today], observer=tracer
        )

    async def both() -> list[Any]:
        return list(await asyncio.gather(one(), one()))

    asyncio.run(both())
    spans = recorded.spans.get_finished_spans()
    roots = by_name(spans, "invoke_agent forecast.rain")
    assert len(roots) == 2
    assert len({root.context.trace_id for root in roots}) == 2
    for root in roots:
        mine = [span for span in spans if span.context.trace_id == root.context.trace_id]
        assert sorted(span.name for span in mine) == [
            "chat rainy",
            "chat rainy",
            "chat rainy",
            "execute_tool rain_today",
            "invoke_agent forecast.rain",
        ]
        assert all(span.parent is not None for span in mine if span is not root)


def test_a_runs_reasoning_tokens_are_summed_on_its_span(recorded: Recorded) -> None:
    from runport.contracts import AdapterDescriptor, ExecutionReceipt, ExecutionRequest, Usage
    from runport.core import build_receipt
    from runport.ports import RuntimeAdapter

    class Reasoner(RuntimeAdapter):
        def descriptor(self) -> AdapterDescriptor:
            return AdapterDescriptor(
                id="reasoner", version="1", capabilities=["structured_output", "text"]
            )

        def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
            return build_receipt(
                request,
                adapter=self.descriptor(),
                text='{"city": "Ghent", "rain_mm": 3.5}',
                usage=Usage(input_tokens=9, output_tokens=40, reasoning_tokens=31),
            )

    run(
        CONTRACT,
        Reasoner(),
        inputs={"city": "Ghent"},
        observer=RunTracer(tracer_provider=recorded.tracer_provider),
    )
    [agent] = [s for s in recorded.spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    attributes = dict(agent.attributes or {})
    assert attributes["gen_ai.usage.output_tokens"] == 40
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 31
