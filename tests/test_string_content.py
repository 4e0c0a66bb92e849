"""The quickstart contract, written with template strings, compiles to the same request
fingerprint as the same contract written as structured content nodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from runport.contracts import fingerprint
from runport.core import compile_contract, load_contract, parse_contract, parse_document

QUICKSTART = Path(__file__).resolve().parent.parent / "examples" / "quickstart"

STRUCTURED_MESSAGES = """
- role: system
  content:
    - kind: text
      value: "You write haiku: three lines, five-seven-five syllables, no title."
- role: user
  content:
    - kind: text
      value: "Topic: "
    - kind: interpolate
      expression: { kind: ref, path: inputs.topic }
      filters: [trim]
    - kind: when
      condition: { kind: ref, path: inputs.audience }
      then:
        - kind: text
          value: "\\nAudience: "
        - kind: interpolate
          expression: { kind: ref, path: inputs.audience }
"""


def _structured_form() -> dict[str, Any]:
    data = parse_document((QUICKSTART / "contract.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    string_messages = data["messages"]
    data["messages"] = yaml.safe_load(STRUCTURED_MESSAGES)
    assert data["messages"] != string_messages
    return data


@pytest.mark.parametrize(
    "inputs",
    [
        json.loads((QUICKSTART / "input.json").read_text(encoding="utf-8"))["inputs"],
        {"topic": "  tides  "},
        {"topic": "rain", "audience": "children"},
    ],
)
def test_the_quickstart_in_structured_form_has_the_same_request_fingerprint(
    inputs: dict[str, Any],
) -> None:
    from_strings = load_contract(QUICKSTART / "contract.yaml")
    structured = parse_contract(_structured_form())

    assert from_strings == structured
    expected = compile_contract(structured, inputs=inputs)
    actual = compile_contract(from_strings, inputs=inputs)
    assert actual == expected
    assert fingerprint(actual) == fingerprint(expected)
