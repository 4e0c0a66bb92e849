"""Prompt-cache counts on spans (ADR 0051): a call's span and a run's span carry
``gen_ai.usage.cache_read.input_tokens``/``cache_creation.input_tokens`` when reported, the
run's summed over its turns; absent or 0, the attributes are left out."""

from __future__ import annotations

from pydantic import BaseModel

from runport.application import define_contract, run
from runport.contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    ToolCall,
    Usage,
)
from runport.core import build_receipt
from runport.otel import RunTracer, Traced
from runport.ports import RuntimeAdapter

from .otel_doubles import Recorded, make_request

READ = "gen_ai.usage.cache_read.input_tokens"
WRITE = "gen_ai.usage.cache_creation.input_tokens"


class Answer(BaseModel):
    city: str


CONTRACT = define_contract(
    "cache.city", user="Which city? {{ inputs.q }}", inputs={"q": str}, output=Answer
)


class Cached(RuntimeAdapter):
    """Calls ``lookup`` once, then answers; each turn reports ``usage``."""

    def __init__(self, usage: Usage, *, calls_a_tool: bool = False) -> None:
        self.usage = usage
        self.calls_a_tool = calls_a_tool
        self.turns = 0

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id="cached",
            version="1",
            provider="anthropic",
            model="m",
            capabilities=["structured_output", "text", "tools"],
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        self.turns += 1
        if self.calls_a_tool and self.turns == 1:
            return build_receipt(
                request,
                adapter=self.descriptor(),
                tool_calls=[ToolCall(call_id="c1", name="lookup", arguments={})],
                usage=self.usage,
            )
        return build_receipt(
            request, adapter=self.descriptor(), text='{"city": "Ghent"}', usage=self.usage
        )


def lookup() -> str:
    """Looks the city up."""
    return "Ghent"


def test_a_calls_span_carries_the_cache_counts(recorded: Recorded) -> None:
    usage = Usage(input_tokens=2048, output_tokens=5, cache_read_tokens=1920, cache_write_tokens=64)
    Traced(Cached(usage), **recorded.providers).execute(make_request())
    attributes = dict(recorded.only_span().attributes or {})
    assert (attributes[READ], attributes[WRITE]) == (1920, 64)
    assert attributes["gen_ai.usage.input_tokens"] == 2048  # the counts are parts of it


def test_a_call_without_cache_counts_has_no_cache_attributes(recorded: Recorded) -> None:
    Traced(Cached(Usage(input_tokens=9, output_tokens=2)), **recorded.providers).execute(
        make_request()
    )
    attributes = dict(recorded.only_span().attributes or {})
    assert READ not in attributes
    assert WRITE not in attributes


def test_a_runs_span_sums_the_cache_counts_of_its_turns(recorded: Recorded) -> None:
    usage = Usage(input_tokens=100, output_tokens=5, cache_read_tokens=80, cache_write_tokens=10)
    result = run(
        CONTRACT,
        Cached(usage, calls_a_tool=True),
        inputs={"q": "?"},
        tools=[lookup],
        observer=RunTracer(tracer_provider=recorded.tracer_provider),
    )
    assert result.usage == Usage(
        input_tokens=200, output_tokens=10, cache_read_tokens=160, cache_write_tokens=20
    )
    [agent] = [s for s in recorded.spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    attributes = dict(agent.attributes or {})
    assert (attributes[READ], attributes[WRITE]) == (160, 20)
