"""Contracts defined in Python are plain contracts: same document, same compile, same
fingerprints as their YAML twin (docs/python-contracts.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError
from typing_extensions import TypedDict  # typing.TypedDict carries no field metadata before 3.12

from runport.application import RunResult, Tool, define_contract, output_as
from runport.contracts import ErrorCode, Usage, fingerprint
from runport.core import ContractError, compile_contract, parse_contract, parse_document


class Plan(BaseModel):
    """A day plan."""

    city: str
    stops: list[str]


class Stay(BaseModel):
    nights: int


class TripInputs(BaseModel):
    city: str = Field(description="Where to go.")
    days: int = 1
    stay: Stay | None = None


def get_weather(city: str) -> float:
    """Current temperature in a city, in degrees Celsius.

    Longer notes that stay out of the description."""
    return 20.0


TWIN = """
api_version: runport/v1alpha1
id: trip.plan
version: 1.0.0
inputs:
  city: {schema: {type: string}, required: true}
  days: {schema: {type: integer}, required: true}
capabilities: [structured_output, tool_calls]
messages:
  - role: system
    content:
      - {kind: text, value: "You plan trips."}
  - role: user
    content:
      - {kind: text, value: "Plan "}
      - kind: interpolate
        expression: {kind: ref, path: inputs.days}
      - {kind: text, value: " days in "}
      - kind: interpolate
        expression: {kind: ref, path: inputs.city}
        filters: [trim]
      - {kind: text, value: "."}
output_schema:
  description: A day plan.
  title: Plan
  type: object
  required: [city, stops]
  properties:
    city: {title: City, type: string}
    stops: {title: Stops, type: array, items: {type: string}}
tools:
  - name: get_weather
    description: Current temperature in a city, in degrees Celsius.
    parameters:
      type: object
      additionalProperties: false
      required: [city]
      properties:
        city: {title: City, type: string}
"""


def test_a_python_contract_is_its_yaml_twin_and_compiles_to_the_same_fingerprint() -> None:
    contract = define_contract(
        "trip.plan",
        system="You plan trips.",
        user="Plan {{ inputs.days }} days in {{ inputs.city | trim }}.",
        inputs={"city": str, "days": int},
        output=Plan,
        tools=[get_weather],
    )
    twin = parse_contract(parse_document(TWIN))
    assert contract == twin
    values = {"city": " Ghent ", "days": 2}
    ours, theirs = compile_contract(contract, inputs=values), compile_contract(twin, inputs=values)
    assert ours == theirs
    assert fingerprint(ours) == fingerprint(theirs)
    assert ours.messages[1].content == "Plan 2 days in Ghent."


def test_inputs_from_a_model_keep_required_defaults_descriptions_and_nested_models() -> None:
    contract = define_contract(
        "trip", user="{{ inputs.city }} for {{ inputs.stay.nights }}", inputs=TripInputs
    )
    assert {name: spec.required for name, spec in contract.inputs.items()} == {
        "city": True,
        "days": False,
        "stay": False,
    }
    assert contract.inputs["city"].description == "Where to go."
    compiled = compile_contract(contract, inputs={"city": "Ghent", "stay": {"nights": 3}})
    assert compiled.messages[0].content == "Ghent for 3"
    with pytest.raises(ContractError) as caught:
        compile_contract(contract, inputs={"city": "Ghent", "stay": {"nights": "many"}})
    assert [(d.code, d.json_pointer) for d in caught.value.diagnostics] == [
        (ErrorCode.VALUE_SCHEMA, "/inputs/stay")
    ]


class Person(TypedDict):
    name: str


@dataclass
class Pet:
    name: str
    legs: int = 4


@pytest.mark.parametrize(("types", "required"), [(Person, ["name"]), (Pet, ["name"])])
def test_inputs_from_typed_dicts_and_dataclasses(types: Any, required: list[str]) -> None:
    contract = define_contract("x", user="Hi {{ inputs.name }}", inputs=types)
    assert [name for name, spec in contract.inputs.items() if spec.required] == required
    assert compile_contract(contract, inputs={"name": "Ada"}).messages[0].content == "Hi Ada"


def test_context_values_are_declared_like_inputs() -> None:
    contract = define_contract("x", system="Today is {{ context.today }}.", context={"today": str})
    compiled = compile_contract(contract, inputs={}, context={"today": "Monday"})
    assert compiled.messages == [compiled.messages[0]]
    assert compiled.messages[0].role == "system"
    assert compiled.messages[0].content == "Today is Monday."


def test_a_text_contract_by_default() -> None:
    contract = define_contract("x", user="Say hi.")
    assert contract.output_schema == {"type": "string"}
    assert contract.capabilities == ["text"]
    assert contract.tools == []


def test_messages_pairs_keep_their_order_and_may_be_structured() -> None:
    contract = define_contract(
        "x",
        messages=[
            ("developer", "Be brief."),
            (
                "user",
                [
                    "Hello ",
                    {"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.n"}},
                ],
            ),
            ("assistant", "Hi."),
        ],
        inputs={"n": str},
        capabilities=["text", "streaming"],
        runtime_policy={"temperature": 0},
    )
    compiled = compile_contract(contract, inputs={"n": "you"})
    assert [(m.role, m.content) for m in compiled.messages] == [
        ("developer", "Be brief."),
        ("user", "Hello you"),
        ("assistant", "Hi."),
    ]
    assert compiled.required_capabilities == ["streaming", "text"]
    assert compiled.runtime_policy == {"temperature": 0}


def test_an_explicit_tool_keeps_its_name_and_description() -> None:
    tool = Tool.from_function(get_weather, name="weather", description="Weather now.")
    contract = define_contract("x", user="Go.", tools=[tool])
    assert [(t.name, t.description) for t in contract.tools] == [("weather", "Weather now.")]
    assert contract.capabilities == ["text", "tool_calls"]


def test_problems_are_contract_errors_with_pointers() -> None:
    with pytest.raises(ContractError) as caught:
        define_contract(
            "x", user="Hi {{ inputs.nme | title }} {{ inputs.age }}", inputs={"name": str}
        )
    assert [(d.code, d.json_pointer) for d in caught.value.diagnostics] == [
        (ErrorCode.CONTRACT_INVALID, "/messages/0/content"),
        (ErrorCode.CONTRACT_INVALID, "/messages/0/content"),
    ]
    assert str(caught.value).startswith("contract 'x': 2 problems")
    with pytest.raises(ContractError, match="semantic version"):
        define_contract("x", user="Hi", version="1")


def test_misuse_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not both"):
        define_contract("x", system="a", messages=[("user", "b")])
    with pytest.raises(TypeError, match="no named fields"):
        define_contract("x", user="b", inputs=int)


class Stamp(BaseModel):
    at: datetime
    tags: tuple[str, ...]


def test_output_as_reads_json_data_into_the_type() -> None:
    stamp = output_as({"at": "2026-11-30T18:00:00Z", "tags": ["a"]}, Stamp)
    assert stamp == Stamp(at=datetime(2026, 11, 30, 18, tzinfo=UTC), tags=("a",))
    assert output_as("plain", str) == "plain"
    assert output_as([1, 2], list[int]) == [1, 2]
    with pytest.raises(ValidationError):
        output_as({"at": "never"}, Stamp)


def test_a_run_result_gives_its_output_as_the_contract_s_type() -> None:
    result = RunResult(
        output={"city": "Ghent", "stops": ["Gravensteen"]},
        output_schema_valid=True,
        receipts=(),
        messages=(),
        usage=Usage(),
    )
    assert result.output_as(Plan) == Plan(city="Ghent", stops=["Gravensteen"])
