"""Fuzzing every loader with hostile shapes (docs/limits.md): whatever the text, a loader
answers with its value or its own coded error — never another exception."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runport.contracts import MAX_INT_DIGITS, MAX_JSON_DEPTH, ErrorCode
from runport.core import (
    Contract,
    ContractError,
    DocumentError,
    Scenario,
    ScenarioError,
    compile_contract,
    load_contract,
    load_scenario,
    parse_contract,
    parse_document,
)

CODES = {code.value for code in ErrorCode}


def attempt(call: Callable[[], Any], error: type[Exception]) -> Any:
    """What ``call`` returned, or the ``error`` it raised; any other exception fails the test."""
    try:
        return call()
    except error as raised:
        return raised


def coded(diagnostics: list[Any]) -> bool:
    return bool(diagnostics) and {d.code for d in diagnostics} <= CODES


FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _nested(depth: int, opener: str, closer: str) -> str:
    return opener * depth + "1" + closer * depth


def _ladder(levels: int, width: int) -> str:
    lines = ["l0: &l0 [" + ", ".join(["x"] * width) + "]"]
    lines += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * width) + "]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


deep = st.builds(
    lambda depth, pair: _nested(depth, *pair),
    st.integers(min_value=MAX_JSON_DEPTH - 2, max_value=3_000),
    st.sampled_from([("[", "]"), ('{"a":', "}"), ("- ", "")]),
) | st.builds(
    _nested,
    st.integers(min_value=MAX_JSON_DEPTH - 2, max_value=1_500),
    st.sampled_from(["[", '{"a": ', "{a: "]),
    st.sampled_from(["]", "}"]),
)
aliases = st.builds(
    _ladder, st.integers(min_value=1, max_value=14), st.integers(min_value=2, max_value=12)
) | st.sampled_from(
    [
        "x: &a [*a]\n",
        "x: &a {k: *a}\n",
        "a: &a [&b [*a]]\n",
        "- &a [*b]\n- &b [*a]\n",
        "<<: *undefined\n",
        "a: &a {x: 1}\nb: {<<: [*a, *a, *a]}\n",
    ]
)
numbers = st.builds(
    lambda digits, form: form.format("1" * digits),
    st.integers(min_value=MAX_INT_DIGITS - 2, max_value=MAX_INT_DIGITS + 50),
    st.sampled_from(["{}", "-{}", "x: {}", "x: 0x{}", '{{"n": {}}}', "[{}.5e999]", "x: {}.0e+999"]),
) | st.sampled_from(["NaN", "[Infinity]", "x: .nan", "x: -.inf", "1e400", '{"x": -1e999}'])
surrogates = st.builds(
    lambda code, form: form.replace("SUR", f"\\u{code:04x}"),
    st.integers(min_value=0xD800, max_value=0xDFFF),
    st.sampled_from(['"SUR"', '{"SUR": 1}', 'x: "SUR"', '["aSURb"]', 'k: ["SUR"]']),
) | st.builds(lambda code: f"x: a{chr(code)}b\n", st.integers(min_value=0xD800, max_value=0xDFFF))
duplicates = st.sampled_from(
    ['{"a": 1, "a": 1}', "a: 1\na: 1\n", "{a: 1, a: 2}", "x:\n  b: 1\n  b: 2\n", "? a\n? a\n"]
)
tags = st.sampled_from(
    [
        "x: !!binary aGk=\n",
        "x: !!set {a}\n",
        "x: !!omap [{a: 1}]\n",
        "x: !!timestamp 2024-01-01\n",
        "x: !!python/object:os.system {}\n",
        "x: !!float nope\n",
        "x: !!int 1_0x\n",
        "x: !custom 1\n",
        "1: a\n",
        "[1]: a\n",
        "{a: 1}: b\n",
    ]
)
hostile = deep | aliases | numbers | surrogates | duplicates | tags | st.text(max_size=80)


@FUZZ
@given(text=hostile)
def test_the_document_reader_answers_a_value_or_a_document_error(text: str) -> None:
    outcome = attempt(lambda: parse_document(text, source="fuzz"), DocumentError)

    if isinstance(outcome, DocumentError):
        assert outcome.code == "TQX_DATA_INVALID"
        assert outcome.message


CONTRACT = """api_version: runport/v1alpha1
id: fuzzed
version: 1.0.0
inputs:
  topic: {{schema: {{type: string}}, required: true}}
messages:
  - role: user
    content:
      - {{kind: text, value: "Write about "}}
      - {{kind: interpolate, expression: {{kind: ref, path: inputs.topic}}}}
output_schema: {schema}
runtime_policy: {policy}
"""

refs = st.sampled_from(
    [
        "file:///etc/passwd",
        "http://127.0.0.1:9/s.json",
        "other.json",
        "#",
        "#/$defs/missing",
        "#/properties",
        "#nowhere",
        "#/$defs/s",
    ]
)
schemas = (
    st.builds(lambda ref: f'{{$ref: "{ref}", $defs: {{s: {{type: string}}}}}}', refs)
    | st.builds(
        lambda pattern: f"{{type: string, pattern: '{pattern}'}}",
        st.sampled_from(["^(a+)+$", "(a)\\1", "(?=x)", "[", "a{2,5000}", "\\p{L}"]),
    )
    | st.just("{allOf: [{$ref: '#'}]}")
)
fragments = hostile.map(lambda text: text.replace("\n", " "))


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


@FUZZ
@pytest.mark.filterwarnings("ignore::runport.core.RuntimePolicyWarning")  # a fuzzed key loads
@given(schema=schemas | fragments, policy=fragments | st.just("{}"))
def test_the_contract_loader_answers_a_contract_or_a_contract_error(
    tmp_path: Path, schema: str, policy: str
) -> None:
    path = _write(tmp_path, "c.yaml", CONTRACT.format(schema=schema, policy=policy))
    outcome = attempt(lambda: load_contract(path), ContractError)

    if isinstance(outcome, ContractError):
        assert coded(outcome.diagnostics)
    else:
        assert isinstance(outcome, Contract)
        _compile_fuzzed(outcome, "x")


@FUZZ
@given(text=hostile)
def test_the_contract_loader_answers_whole_hostile_files(tmp_path: Path, text: str) -> None:
    outcome = attempt(lambda: load_contract(_write(tmp_path, "c.yaml", text)), ContractError)

    assert isinstance(outcome, Contract) or coded(outcome.diagnostics)


SCENARIO = """api_version: runport.mock/v1
id: fuzzed
turns:
  - events:
      - {{kind: delta, text: {text}}}
      - {{kind: finish, output: {output}}}
    tool_results: {results}
"""


@FUZZ
@given(text=fragments, output=fragments, results=fragments | st.just("{}"))
def test_the_scenario_loader_answers_a_scenario_or_a_scenario_error(
    tmp_path: Path, text: str, output: str, results: str
) -> None:
    path = _write(tmp_path, "s.yaml", SCENARIO.format(text=text, output=output, results=results))
    outcome = attempt(lambda: load_scenario(path), ScenarioError)

    assert isinstance(outcome, Scenario) or outcome.code == "TQX_DATA_INVALID"


@FUZZ
@given(text=hostile)
def test_the_scenario_loader_answers_whole_hostile_files(tmp_path: Path, text: str) -> None:
    outcome = attempt(lambda: load_scenario(_write(tmp_path, "s.json", text)), ScenarioError)

    assert isinstance(outcome, Scenario) or outcome.code == "TQX_DATA_INVALID"


def _deep_value(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


values = (
    st.builds(_deep_value, st.integers(min_value=MAX_JSON_DEPTH - 2, max_value=5_000))
    | st.integers(min_value=10 ** (MAX_INT_DIGITS - 1), max_value=10 ** (MAX_INT_DIGITS + 5))
    | st.sampled_from([float("nan"), float("inf"), "\ud800", {"\udc00": 1}, {1: "x"}, b"x"])
    | st.text(max_size=20)
)


def _compile_fuzzed(contract: Contract, topic: Any) -> None:
    outcome = attempt(
        lambda: compile_contract(contract, inputs={"topic": topic}, context={"extra": topic}),
        ContractError,
    )

    assert not isinstance(outcome, ContractError) or coded(outcome.diagnostics)


@FUZZ
@given(topic=values)
def test_compiling_hostile_inputs_answers_an_interaction_or_a_contract_error(topic: Any) -> None:
    contract = parse_contract(
        {
            "api_version": "runport/v1alpha1",
            "id": "c",
            "version": "1.0.0",
            "inputs": {"topic": {"schema": {}}},
            "context": {"extra": {"schema": {"type": "string", "pattern": "^(a+)+$"}}},
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "kind": "interpolate",
                            "expression": {"kind": "ref", "path": "inputs.topic"},
                        }
                    ],
                }
            ],
            "output_schema": {"type": "string"},
        }
    )
    _compile_fuzzed(contract, topic)


@FUZZ
@given(data=values)
def test_parsing_hostile_contract_data_answers_a_contract_error(data: Any) -> None:
    outcome = attempt(
        lambda: parse_contract({"api_version": "runport/v1alpha1", "extensions": {"x": data}}),
        ContractError,
    )

    assert isinstance(outcome, ContractError)
    assert coded(outcome.diagnostics)


def test_contract_text_with_a_lone_surrogate_is_refused_at_load(tmp_path: Path) -> None:
    """Regression (issue 10, item 4): it loaded, then failed with UnicodeEncodeError on the
    mock path when the request was fingerprinted."""
    text = CONTRACT.format(schema="{type: string}", policy="{}").replace(
        '"Write about "', '"Write \\ud800 about "'
    )

    with pytest.raises(ContractError) as caught:
        load_contract(_write(tmp_path, "c.yaml", text))

    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code in {ErrorCode.PARSE_YAML, ErrorCode.CONTRACT_INVALID}
    assert "Unicode" in diagnostic.message
