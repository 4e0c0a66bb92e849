"""However a scenario splits its content into fragments, the receipt is the same (law 3)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import (
    CompiledInteraction,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    Message,
    StreamEvent,
)
from runport.core import Scenario, StreamAssembler, parse_scenario
from runport.mock import ScriptedRuntime


def _request(schema: dict[str, Any]) -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="test/0",
            contract_id="split",
            contract_version="1.0.0",
            messages=[Message(role="user", content="go")],
            output_schema=schema,
        )
    )


TEXT_REQUEST = _request({"type": "string"})
JSON_REQUEST = _request({"type": ["object", "array", "string", "number", "boolean", "null"]})

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def splits(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut into non-empty pieces at arbitrary code-point boundaries."""
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=8)))
    cuts = [cut for cut in cuts if 0 < cut < len(text)]
    bounds = [0, *cuts, len(text)]
    return [text[start:end] for start, end in itertools.pairwise(bounds)]


def _scenario(events: list[dict[str, Any]]) -> Scenario:
    return parse_scenario(
        {"api_version": "runport.mock/v1", "id": "split", "turns": [{"events": events}]}
    )


def _streamed(
    scenario: Scenario, request: ExecutionRequest
) -> tuple[list[StreamEvent], ExecutionReceipt]:
    events: list[StreamEvent] = []
    receipt = ScriptedRuntime(scenario).execute_streaming(request, events.append)
    assembler = StreamAssembler()
    for event in events:
        assembler.feed(event)
    assert events[-1] == Complete(receipt=receipt)
    assert assembler.assembly_problems(receipt) == []
    return events, receipt


def _deltas(pieces: list[str]) -> list[dict[str, Any]]:
    return [{"kind": "delta", "text": piece} for piece in pieces]


@settings(deadline=None)
@given(data=st.data(), text=st.text(min_size=1, max_size=40))
def test_any_split_of_a_text_gives_the_single_delta_receipt(data: st.DataObject, text: str) -> None:
    pieces = data.draw(splits(text))
    whole = ScriptedRuntime(
        _scenario([{"kind": "delta", "text": text}, {"kind": "finish"}])
    ).execute(TEXT_REQUEST)

    _, receipt = _streamed(_scenario([*_deltas(pieces), {"kind": "finish"}]), TEXT_REQUEST)

    assert receipt == whole
    assert receipt.model_dump_json() == whole.model_dump_json()
    assert receipt.text == text


@settings(deadline=None)
@given(data=st.data(), value=json_values, indent=st.sampled_from([None, 1]))
def test_any_split_of_a_json_document_gives_the_single_delta_receipt(
    data: st.DataObject, value: Any, indent: int | None
) -> None:
    document = json.dumps(value, indent=indent)
    pieces = data.draw(splits(document))
    whole = ScriptedRuntime(
        _scenario([{"kind": "delta", "text": document}, {"kind": "finish"}])
    ).execute(JSON_REQUEST)

    _, receipt = _streamed(_scenario([*_deltas(pieces), {"kind": "finish"}]), JSON_REQUEST)

    assert receipt == whole
    assert receipt.model_dump_json() == whole.model_dump_json()
    assert receipt.output_schema_valid is True
    assert json.dumps(receipt.output) == json.dumps(json.loads(document))


@settings(deadline=None)
@given(
    data=st.data(),
    arguments=st.dictionaries(st.text(max_size=6), json_values, max_size=4),
    announce=st.booleans(),
)
def test_any_split_of_tool_call_arguments_gives_the_same_receipt(
    data: st.DataObject, arguments: dict[str, Any], announce: bool
) -> None:
    document = json.dumps(arguments)
    pieces = data.draw(splits(document))
    first = {"kind": "tool_call_delta", "index": 0, "call_id": "c", "name": "tool"}
    whole = ScriptedRuntime(
        _scenario([{**first, "arguments_fragment": document}, {"kind": "finish"}])
    ).execute(TEXT_REQUEST)
    fragments = [{**first, "arguments_fragment": ""}] if announce else []
    fragments += [
        {"kind": "tool_call_delta", "index": 0, "arguments_fragment": piece}
        if fragments or number
        else {**first, "arguments_fragment": piece}
        for number, piece in enumerate(pieces)
    ]

    events, receipt = _streamed(_scenario([*fragments, {"kind": "finish"}]), TEXT_REQUEST)

    assert receipt == whole
    assert receipt.model_dump_json() == whole.model_dump_json()
    assert len(events) == len(fragments) + 1
    assert receipt.tool_calls is not None
    assert json.dumps(receipt.tool_calls[0].arguments) == json.dumps(json.loads(document))
