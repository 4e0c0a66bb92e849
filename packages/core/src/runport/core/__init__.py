"""Contract loading and compilation, output validation, receipts, stream assembly and the
scenario format (docs/contracts.md, docs/scenarios.md)."""

from runport.core._assembler import StreamAssembler, StreamGrammarError
from runport.core._compile import compile_contract
from runport.core._contract import Contract, ContractError, load_contract, parse_contract
from runport.core._receipt import build_receipt, is_text_schema, parse_json_text
from runport.core._scenario import (
    DelayEvent,
    DeltaEvent,
    FailEvent,
    FinishEvent,
    Scenario,
    ScenarioError,
    ScenarioEvent,
    ScenarioTurn,
    ToolCallDeltaEvent,
    UsageEvent,
    load_scenario,
    parse_scenario,
)
from runport.core._schema import schema_errors, validate_output
from runport.core._yaml import load_yaml

__all__ = [
    "Contract",
    "ContractError",
    "DelayEvent",
    "DeltaEvent",
    "FailEvent",
    "FinishEvent",
    "Scenario",
    "ScenarioError",
    "ScenarioEvent",
    "ScenarioTurn",
    "StreamAssembler",
    "StreamGrammarError",
    "ToolCallDeltaEvent",
    "UsageEvent",
    "build_receipt",
    "compile_contract",
    "is_text_schema",
    "load_contract",
    "load_scenario",
    "load_yaml",
    "parse_contract",
    "parse_json_text",
    "parse_scenario",
    "schema_errors",
    "validate_output",
]
