from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runport.application import execute_contract
from runport.contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    fingerprint,
)
from runport.core import build_receipt, load_contract
from runport.ports import PortError, RuntimeAdapter, Sink

CONTRACT = Path(__file__).with_name("contract.yaml")


class FakeAdapter(RuntimeAdapter):
    """A hand-written fake of the port: answers with ``text`` (streamed in ``parts``), with
    tool calls, or fails with ``error`` after ``parts``."""

    def __init__(
        self,
        parts: list[str] | None = None,
        *,
        calls: list[ToolCall] | None = None,
        error: PortError | None = None,
        capabilities: tuple[str, ...] = ("structured_output", "text", "tool_calls"),
    ) -> None:
        self.parts = parts or []
        self.calls = calls or []
        self.error = error
        self.capabilities = list(capabilities)
        self.requests: list[ExecutionRequest] = []

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="fake", version="1", capabilities=self.capabilities)

    def _receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        return build_receipt(
            request,
            adapter=self.descriptor(),
            text="".join(self.parts),
            tool_calls=self.calls,
            finish_reason="stop",
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return self._receipt(request)

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        self.requests.append(request)
        for part in self.parts:
            sink(Delta(text=part))
        for index, call in enumerate(self.calls):
            sink(ToolCallDelta(index=index, call_id=call.call_id, name=call.name))
        if self.error is not None:
            sink(Failed(code=self.error.code, message=self.error.message))
            raise self.error
        receipt = self._receipt(request)
        sink(Complete(receipt=receipt))
        return receipt


INPUTS = {"text": "Meet me in Delft on 1 September 2026."}
ANSWER = ['{"city": "Delft", ', '"day": "2026-09-01"}']

Collected = tuple[list[StreamEvent], Callable[[StreamEvent], None]]


def test_a_plain_call_returns_an_ok_envelope_with_fingerprints() -> None:
    adapter = FakeAdapter(ANSWER)
    envelope = execute_contract(CONTRACT, adapter, inputs=INPUTS)
    assert envelope.ok
    assert envelope.operation == "execute_contract"
    assert envelope.api_version == "runport/v1alpha1"
    receipt = envelope.result
    assert receipt is not None
    assert receipt.output == {"city": "Delft", "day": "2026-09-01"}
    assert envelope.fingerprints == {
        "request": fingerprint(adapter.requests[0].interaction),
        "output": fingerprint(receipt.output),
    }
    assert envelope.stream_events is None
    assert envelope.diagnostics == []


def test_streaming_keeps_every_event_and_the_same_receipt(collect: Collected) -> None:
    seen, on_event = collect
    streamed = execute_contract(
        load_contract(CONTRACT), FakeAdapter(ANSWER), inputs=INPUTS, on_event=on_event
    )
    plain = execute_contract(CONTRACT, FakeAdapter(ANSWER), inputs=INPUTS)
    assert streamed.result == plain.result
    assert seen == [Delta(text=ANSWER[0]), Delta(text=ANSWER[1]), Complete(receipt=plain.result)]
    assert streamed.stream_events == seen


def test_an_invalid_output_is_not_ok_but_keeps_the_receipt() -> None:
    envelope = execute_contract(
        CONTRACT, FakeAdapter(['{"city": "Delft", "day": "1 sept"}']), inputs=INPUTS
    )
    assert not envelope.ok
    assert envelope.result is not None
    assert envelope.result.output_schema_valid is False
    assert [(d.code, d.json_pointer) for d in envelope.diagnostics] == [
        ("TQX_OUTPUT_SCHEMA", "/day")
    ]
    assert envelope.fingerprints["output"] == envelope.result.output_fingerprint


def test_text_that_is_not_json_is_an_output_schema_failure() -> None:
    envelope = execute_contract(CONTRACT, FakeAdapter(["Delft, tomorrow"]), inputs=INPUTS)
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == ["TQX_OUTPUT_SCHEMA"]
    assert envelope.result is not None
    assert envelope.result.output == "Delft, tomorrow"


def test_a_tool_call_turn_is_ok_with_a_pending_warning() -> None:
    call = ToolCall(call_id="c1", name="lookup", arguments={"q": "x"})
    envelope = execute_contract(CONTRACT, FakeAdapter(calls=[call]), inputs=INPUTS)
    assert envelope.ok
    assert envelope.result is not None
    assert envelope.result.output is None
    assert [(d.code, d.severity) for d in envelope.diagnostics] == [
        ("TQX_TOOL_CALLS_PENDING", "warning")
    ]


@pytest.mark.parametrize(
    ("inputs", "codes"),
    [
        ({}, ["TQX_VALUE_REQUIRED"]),
        ({"text": ""}, ["TQX_VALUE_SCHEMA"]),
        ({"text": "x", "extra": 1}, ["TQX_VALUE_UNKNOWN"]),
    ],
)
def test_input_problems_come_back_before_the_adapter_is_called(
    inputs: dict[str, object], codes: list[str]
) -> None:
    adapter = FakeAdapter(ANSWER)
    envelope = execute_contract(CONTRACT, adapter, inputs=inputs)
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == codes
    assert envelope.result is None
    assert adapter.requests == []


def test_the_capability_gate_runs_before_any_call() -> None:
    adapter = FakeAdapter(ANSWER, capabilities=("text",))
    envelope = execute_contract(CONTRACT, adapter, inputs=INPUTS)
    assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_CAPABILITY_UNSUPPORTED"]
    assert "structured_output" in envelope.diagnostics[0].message
    assert adapter.requests == []


def test_a_broken_contract_file_is_a_not_ok_envelope(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("api_version: runport/v1alpha1\nid: [unclosed\n", encoding="utf-8")
    envelope = execute_contract(broken, FakeAdapter(ANSWER), inputs=INPUTS)
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == ["TQX_PARSE_YAML"]


def test_a_runtime_failure_is_not_ok_and_streams_its_failed(collect: Collected) -> None:
    seen, on_event = collect
    error = PortError(ErrorCode.RUNTIME_RATE_LIMITED, "slow down", retry_after_ms=2000)
    envelope = execute_contract(
        CONTRACT, FakeAdapter(["{"], error=error), inputs=INPUTS, on_event=on_event
    )
    assert not envelope.ok
    assert envelope.result is None
    (diagnostic,) = envelope.diagnostics
    assert diagnostic.code == "TQX_RUNTIME_RATE_LIMITED"
    assert diagnostic.help is not None
    assert "2000 ms" in diagnostic.help
    assert envelope.stream_events == [
        Delta(text="{"),
        Failed(code="TQX_RUNTIME_RATE_LIMITED", message="slow down"),
    ]
    assert envelope.stream_events == seen


def test_a_sink_exception_propagates_unchanged() -> None:
    class Stop(Exception):
        pass

    stop = Stop()

    def on_event(event: StreamEvent) -> None:
        raise stop

    with pytest.raises(Stop) as raised:
        execute_contract(CONTRACT, FakeAdapter(ANSWER), inputs=INPUTS, on_event=on_event)
    assert raised.value is stop


def test_fixture_output_reaches_the_request() -> None:
    adapter = FakeAdapter(ANSWER)
    execute_contract(CONTRACT, adapter, inputs=INPUTS, fixture_output={"k": 1})
    assert adapter.requests[0].fixture_output == {"k": 1}


def test_a_port_error_raised_by_the_caller_is_not_a_runtime_failure() -> None:
    mine = PortError(ErrorCode.RUNTIME_TIMEOUT, "raised by my handler")

    def on_event(event: StreamEvent) -> None:
        raise mine

    with pytest.raises(PortError) as raised:
        execute_contract(CONTRACT, FakeAdapter(ANSWER), inputs=INPUTS, on_event=on_event)
    assert raised.value is mine


def test_a_lone_surrogate_input_is_a_value_error_not_a_crash() -> None:
    envelope = execute_contract(CONTRACT, FakeAdapter(ANSWER), inputs={"text": "\ud800"})
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == ["TQX_VALUE_SCHEMA"]


def test_a_recursive_yaml_alias_is_a_parse_error(tmp_path: Path) -> None:
    contract = tmp_path / "loop.yaml"
    contract.write_text(
        CONTRACT.read_text(encoding="utf-8") + "provenance: &p {self: *p}\n", encoding="utf-8"
    )
    envelope = execute_contract(contract, FakeAdapter(ANSWER), inputs=INPUTS)
    assert [d.code for d in envelope.diagnostics] == ["TQX_PARSE_YAML"]
    assert "recursive alias" in envelope.diagnostics[0].message


class BrokenAdapter(RuntimeAdapter):
    """An adapter that breaks the port's rules: it raises what is not a ``PortError``, after
    streaming ``parts`` and without a terminal event."""

    def __init__(
        self, error: Exception, parts: tuple[str, ...] = (), descriptor_fails: bool = False
    ):
        self.error = error
        self.parts = parts
        self.descriptor_fails = descriptor_fails

    def descriptor(self) -> AdapterDescriptor:
        if self.descriptor_fails:
            raise self.error
        return AdapterDescriptor(id="broken", version="1", capabilities=["structured_output"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise self.error

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        for part in self.parts:
            sink(Delta(text=part))
        raise self.error


@pytest.mark.parametrize(
    "error", [RecursionError("deep"), OverflowError("big"), ValueError("digits"), KeyError("k")]
)
def test_an_adapter_that_raises_something_else_is_a_coded_envelope(
    error: Exception, collect: Collected
) -> None:
    plain = execute_contract(CONTRACT, BrokenAdapter(error), inputs={"text": "Delft"})
    assert plain.ok is False
    assert [d.code for d in plain.diagnostics] == ["TQX_RUNTIME_INVALID_RESPONSE"]
    assert type(error).__name__ in plain.diagnostics[0].message
    assert str(error) not in plain.diagnostics[0].message

    seen, sink = collect
    streamed = execute_contract(
        CONTRACT, BrokenAdapter(error, ("{",)), inputs={"text": "Delft"}, on_event=sink
    )
    assert streamed.ok is False
    assert [e.kind for e in seen] == ["Delta", "Failed"]
    assert streamed.stream_events == seen
    assert seen[-1] == Failed(
        code="TQX_RUNTIME_INVALID_RESPONSE", message=streamed.diagnostics[0].message
    )


def test_a_descriptor_that_raises_is_a_coded_envelope() -> None:
    adapter = BrokenAdapter(RuntimeError("no descriptor"), descriptor_fails=True)
    envelope = execute_contract(CONTRACT, adapter, inputs={"text": "Delft"})
    assert envelope.ok is False
    assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_INVALID_RESPONSE"]


def test_a_missing_contract_file_and_no_inputs_are_envelopes(tmp_path: Path) -> None:
    missing = execute_contract(tmp_path / "absent.yaml", FakeAdapter(['{"city": "x"}']))
    assert missing.ok is False
    assert missing.diagnostics[0].code.startswith("TQX_")
    no_inputs = execute_contract(CONTRACT, FakeAdapter(['{"city": "x"}']))
    assert [d.code for d in no_inputs.diagnostics] == ["TQX_VALUE_REQUIRED"]
