"""A scripted answer whose JSON is past the bounds fails the call with a coded ``Failed``, one
terminal event, exactly as a real upstream's would (docs/limits.md)."""

from __future__ import annotations

from typing import Any

import pytest

from runport.contracts import MAX_JSON_DEPTH, ExecutionRequest, Failed, StreamEvent
from runport.core import parse_scenario
from runport.mock import ScriptedRuntime
from runport.ports import PortError


def runtime(*events: dict[str, Any]) -> ScriptedRuntime:
    scenario = parse_scenario(
        {"api_version": "runport.mock/v1", "id": "deep", "turns": [{"events": list(events)}]}
    )
    return ScriptedRuntime(scenario)


DEEP = "[" * 1_000 + "]" * 1_000


@pytest.mark.parametrize(
    "events",
    [
        [{"kind": "delta", "text": DEEP}, {"kind": "finish"}],
        [
            {
                "kind": "tool_call_delta",
                "index": 0,
                "call_id": "c1",
                "name": "t",
                "arguments_fragment": DEEP,
            },
            {"kind": "finish"},
        ],
    ],
)
def test_deep_json_fails_the_call_with_one_coded_terminal(
    events: list[dict[str, Any]], json_request: ExecutionRequest
) -> None:
    """Regression (issue 10, item 4): RecursionError escaped and the stream had no terminal."""
    seen: list[StreamEvent] = []

    with pytest.raises(PortError) as caught:
        runtime(*events).execute_streaming(json_request, seen.append)

    message = f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep"
    assert (caught.value.code, caught.value.message) == ("TQX_RUNTIME_INVALID_RESPONSE", message)
    assert [event for event in seen if isinstance(event, Failed)] == seen[-1:]
    assert seen[-1] == Failed(code="TQX_RUNTIME_INVALID_RESPONSE", message=message)
    with pytest.raises(PortError):
        runtime(*events).execute(json_request)
