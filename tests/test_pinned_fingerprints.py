"""Request and output fingerprints, and the envelopes around them, pinned to what they were
before the per-contract caches (adr/0028-per-contract-caches.md): a cache that changed a single
byte of a canonical encoding would change a fingerprint here.

The pinned values were recorded with the code as it stood before the caches; each case runs
twice, so the second run is served from the caches the first one filled.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runport.application import aexecute_contract, execute_contract
from runport.contracts import OperationEnvelope, StreamEvent, fingerprint
from runport.core import (
    Contract,
    RuntimePolicyWarning,
    compile_contract,
    load_contract,
    load_scenario,
    parse_contract,
)
from runport.mock import AsyncScriptedRuntime, ScriptedRuntime

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "examples" / "quickstart"
TRIP = ROOT / "examples" / "streaming_run"
QUICK = ROOT / "packages" / "cli" / "tests" / "data" / "quick"
CORPUS = ROOT / "packages" / "cli" / "tests" / "data" / "corpus"

KITCHEN: dict[str, Any] = {
    "api_version": "runport/v1alpha1",
    "id": "pinned.kitchen",
    "version": "1.2.3",
    "inputs": {
        "name": {"schema": {"type": "string", "minLength": 1}, "required": True},
        "tags": {"schema": {"type": "array", "items": {"type": "string"}}},
        "mode": {"schema": {"enum": ["short", "long"]}},
        "data": {"schema": {"type": "object"}},
        "count": {"schema": {"type": "integer", "minimum": 0}},
    },
    "context": {"today": {"schema": {"type": "string", "format": "date"}}},
    "capabilities": ["tool_calls", "text", "text"],
    "messages": [
        {"role": "system", "content": [{"kind": "text", "value": 'Plain "quoted" text, é ✓\n'}]},
        {
            "role": "user",
            "content": [
                {"kind": "text", "value": "Hello "},
                {
                    "kind": "interpolate",
                    "expression": {"kind": "ref", "path": "inputs.name"},
                    "filters": ["trim", "upper"],
                },
                {"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.data"}},
                {
                    "kind": "interpolate",
                    "expression": {"kind": "ref", "path": "inputs.tags"},
                    "filters": ["json"],
                },
                {"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.tags.1"}},
                {"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.data.a.b"}},
                {
                    "kind": "when",
                    "condition": {
                        "kind": "and",
                        "exprs": [
                            {"kind": "ref", "path": "inputs.mode"},
                            {
                                "kind": "not",
                                "expr": {
                                    "kind": "equals",
                                    "left": {"kind": "ref", "path": "inputs.mode"},
                                    "right": {"kind": "literal", "value": "short"},
                                },
                            },
                        ],
                    },
                    "then": [{"kind": "text", "value": " [long]"}],
                    "else": [
                        {
                            "kind": "interpolate",
                            "expression": {"kind": "literal", "value": {"k": [1, 2.5, None]}},
                        }
                    ],
                },
                {
                    "kind": "when",
                    "condition": {
                        "kind": "or",
                        "exprs": [
                            {"kind": "ref", "path": "context.today"},
                            {"kind": "ref", "path": "inputs.count"},
                        ],
                    },
                    "then": [
                        {"kind": "text", "value": " on "},
                        {
                            "kind": "interpolate",
                            "expression": {"kind": "ref", "path": "context.today"},
                        },
                        {
                            "kind": "interpolate",
                            "expression": {"kind": "ref", "path": "inputs.count"},
                        },
                    ],
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "kind": "for_each",
                    "collection": {"kind": "ref", "path": "inputs.tags"},
                    "item": "tag",
                    "separator": ", ",
                    "body": [
                        {
                            "kind": "interpolate",
                            "expression": {"kind": "ref", "path": "tag"},
                            "filters": ["lower"],
                        }
                    ],
                }
            ],
        },
    ],
    "output_schema": {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "score": {"type": "number"}},
        "required": ["answer"],
    },
    "runtime_policy": {"temperature": 1.0, "top_p": 1, "seed": 7, "stream": True, "stop": ["\n"]},
    "tools": [
        {
            "name": "lookup",
            "description": "Look a word up",
            "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
        }
    ],
    "extensions": {"x-pinned": {"nested": [1, 1.0, True, None, "ü"]}},
}

KITCHEN_VALUES: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
    ({"name": "ada"}, None),
    ({"name": "  Grace  ", "tags": ["A", "B"], "mode": "long"}, {"today": "2026-11-30"}),
    ({"name": "x", "tags": ["only"], "mode": "short", "data": {"a": {"b": 1.5}}, "count": 0}, None),
    ({"name": '"esc"\t\u0001 ✓ 😀', "data": {"z": [True, None], "a": 1}, "count": 3}, {}),
]


def _contracts() -> dict[str, Contract]:
    # The kitchen contract's runtime_policy.stream is read by no adapter: it loads, with a
    # RuntimePolicyWarning (ADR 0051), and its fingerprints stay what they were.
    with pytest.warns(RuntimePolicyWarning, match="'stream'"):
        kitchen = parse_contract(KITCHEN)
    return {
        "quickstart": load_contract(QUICKSTART / "contract.yaml"),
        "trip": load_contract(TRIP / "contract.yaml"),
        "quick": load_contract(QUICK / "contract.yaml"),
        "invoice": load_contract(CORPUS / "contracts" / "invoice-dates.yaml"),
        "kitchen": kitchen,
    }


def _inputs(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return dict(data.get("inputs", data))


def _envelope_digest(envelope: OperationEnvelope) -> str:
    dumped = envelope.model_dump(mode="json")
    if dumped.get("result") is not None:
        del dumped["result"]["adapter"]  # the mock's version is not what is pinned here
    return fingerprint(dumped)


def observed() -> dict[str, str]:
    """Every pinned figure, by case name."""
    contracts = _contracts()
    seen: dict[str, str] = {}
    for index, (inputs, context) in enumerate(KITCHEN_VALUES):
        interaction = compile_contract(contracts["kitchen"], inputs=inputs, context=context)
        seen[f"compile kitchen {index}"] = fingerprint(interaction)
        targeted = compile_contract(
            contracts["kitchen"], inputs=inputs, context=context, target_capabilities=["text"]
        )
        seen[f"compile kitchen {index} targeted"] = fingerprint(targeted)
    for topic in ("streaming", "  spaced  ", 'ü€ "q"\n'):
        quick = compile_contract(contracts["quickstart"], inputs={"topic": topic})
        seen[f"compile quickstart {topic!r}"] = fingerprint(quick)
    for name, contract, scenario, inputs in _plays(contracts):
        for streamed in (False, True):
            events: list[StreamEvent] = []
            envelope = execute_contract(
                contract,
                ScriptedRuntime(scenario),
                inputs=inputs,
                on_event=events.append if streamed else None,
            )
            seen[f"play {name} streamed={streamed}"] = _envelope_digest(envelope)
            if envelope.result is not None:
                seen[f"play {name} request"] = envelope.result.request_fingerprint
                seen[f"play {name} output"] = envelope.result.output_fingerprint
        awaited = asyncio.run(
            aexecute_contract(contract, AsyncScriptedRuntime(scenario), inputs=inputs)
        )
        seen[f"play {name} async"] = _envelope_digest(awaited)
    return seen


def _plays(contracts: dict[str, Contract]) -> Iterator[tuple[str, Contract, Any, dict[str, Any]]]:
    quickstart = load_scenario(QUICKSTART / "scenario.yaml")
    yield "quickstart", contracts["quickstart"], quickstart, _inputs(QUICKSTART / "input.json")
    yield (
        "trip",
        contracts["trip"],
        load_scenario(TRIP / "scenario.yaml"),
        _inputs(TRIP / "input.json"),
    )
    for each in ("scenario", "tools", "failing"):
        scenario = load_scenario(QUICK / f"{each}.yaml")
        yield f"quick {each}", contracts["quick"], scenario, _inputs(QUICK / "input.json")
    invoice = load_scenario(CORPUS / "scenarios" / "mock-v1" / "scenario.yaml")
    yield "invoice", contracts["invoice"], invoice, _inputs(CORPUS / "requests" / "invoice.json")


PINNED: dict[str, str] = json.loads(
    (Path(__file__).parent / "data" / "pinned_fingerprints.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("round_", ["cold", "cached"])
def test_fingerprints_and_envelopes_are_what_they_were(round_: str) -> None:
    assert observed() == PINNED


def test_a_contracts_own_fingerprint_is_what_it_was_before_cache_breakpoints() -> None:
    # A batch output file names its contract by this fingerprint; the cache fields a message
    # or a node may carry (adr/0051) are left out of the contract's bytes when not set.
    with pytest.warns(RuntimePolicyWarning):
        kitchen = parse_contract(KITCHEN)
    assert fingerprint(kitchen) == (
        "1e369bc488953d05f2439703acb51d91799c4a48cb2fec14e63428ec14909f7e"
    )
    assert fingerprint(load_contract(QUICKSTART / "contract.yaml")) == (
        "9b67aee556f0940618e7486d1ebe88a0c7ddbd553fc9c5eb8925b0bd6cea9172"
    )
