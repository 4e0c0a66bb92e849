"""A run's result and a failed run's evidence serialise as events do (issue 44 item 3): every
receipt and message inside has the JSON its own ``model_dump_json`` gives, and reads back
equal."""

from __future__ import annotations

import json

import pytest

from runport.application import RunError, RunPartial, RunResult, define_contract, run
from runport.mock import FunctionRuntime
from runport.ports import PortError

CONTRACT = define_contract("weather", user="Weather in {{ inputs.city }}?", inputs={"city": str})


def get_weather(city: str) -> dict[str, object]:
    """Current temperature in a city."""
    return {"city": city, "celsius": 12.5}


def model(request, emit):  # type: ignore[no-untyped-def]
    if request.interaction.messages[-1].role == "tool":
        emit.reasoning("It is mild; ", signature="sig-1")
        emit.text("Light coat")
        emit.usage(input_tokens=9, output_tokens=2, reasoning_tokens=1)
    else:
        emit.tool_call("get_weather", {"city": "Delft"}, call_id="c1")


def test_a_run_result_is_json_as_its_receipts_and_messages_are() -> None:
    result = run(CONTRACT, FunctionRuntime(model), inputs={"city": "Delft"}, tools=[get_weather])
    written = json.loads(result.model_dump_json())
    assert written["output"] == "Light coat"
    assert written["receipts"] == [json.loads(r.model_dump_json()) for r in result.receipts]
    assert written["messages"] == [json.loads(m.model_dump_json()) for m in result.messages]
    assert written["usage"] == json.loads(result.usage.model_dump_json())
    assert "reasoning" in written["receipts"][1]
    assert RunResult.model_validate_json(result.model_dump_json()) == result
    assert result.model_dump(mode="json") == written
    assert json.loads(result.model_dump_json(indent=2)) == written


def test_a_failed_run_s_evidence_is_json_too() -> None:
    def broken(request, emit):  # type: ignore[no-untyped-def]
        emit.text("Hal")
        raise PortError("TQX_RUNTIME_PERMANENT", "refused")

    with pytest.raises(RunError) as raised:
        run(CONTRACT, FunctionRuntime(broken), inputs={"city": "Delft"})
    partial = raised.value.partial
    written = json.loads(partial.model_dump_json())
    assert written["messages"] == [json.loads(m.model_dump_json()) for m in partial.messages]
    assert RunPartial.model_validate_json(partial.model_dump_json()) == partial


def test_what_is_not_a_result_is_refused() -> None:
    with pytest.raises(ValueError, match="output"):
        RunResult.model_validate_json('{"receipts": []}')
