"""The quickstart contract written with string content compiles to the same request fingerprint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from runport.contracts import fingerprint
from runport.core import compile_contract, load_contract, parse_contract, parse_document

QUICKSTART = Path(__file__).resolve().parent.parent / "examples" / "quickstart"

STRING_MESSAGES = """
- role: system
  content: "You write haiku: three lines, five-seven-five syllables, no title."
- role: user
  content:
    - "Topic: {{ inputs.topic | trim }}"
    - kind: when
      condition: { kind: ref, path: inputs.audience }
      then: ["\\nAudience: {{ inputs.audience }}"]
"""


def _string_form() -> dict[str, Any]:
    data = parse_document((QUICKSTART / "contract.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    structured_messages = data["messages"]
    data["messages"] = yaml.safe_load(STRING_MESSAGES)
    assert data["messages"] != structured_messages
    return data


@pytest.mark.parametrize(
    "inputs",
    [
        json.loads((QUICKSTART / "input.json").read_text(encoding="utf-8"))["inputs"],
        {"topic": "  tides  "},
        {"topic": "rain", "audience": "children"},
    ],
)
def test_the_quickstart_in_string_form_has_the_same_request_fingerprint(
    inputs: dict[str, Any],
) -> None:
    structured = load_contract(QUICKSTART / "contract.yaml")
    from_strings = parse_contract(_string_form())

    assert from_strings == structured
    expected = compile_contract(structured, inputs=inputs)
    actual = compile_contract(from_strings, inputs=inputs)
    assert actual == expected
    assert fingerprint(actual) == fingerprint(expected)
