"""Contract loading and compilation, output validation, receipts, stream assembly, the
scenario format, the bounded document reader and partial output — JSON read as it streams
(docs/contracts.md, docs/scenarios.md, docs/limits.md, docs/partial-output.md)."""

from runport.core._assembler import StreamAssembler, StreamGrammarError
from runport.core._compile import compile_contract
from runport.core._contract import Contract, ContractError, load_contract, parse_contract
from runport.core._discovery import is_contract_document, is_scenario_document
from runport.core._document import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENT_NODES,
    MAX_SCALAR_BYTES,
    DocumentError,
    JsonLimitError,
    load_document,
    parse_document,
)
from runport.core._held import HeldCache
from runport.core._partial_json import PartialJSONError
from runport.core._partial_output import PartialJSON, PartialOutput
from runport.core._policy_keys import RUNTIME_POLICY_KEYS, RuntimePolicyWarning
from runport.core._receipt import build_receipt, is_text_schema, normal_finish, parse_json_text
from runport.core._redact import is_secret_parameter, redact_secrets
from runport.core._scenario import (
    CitationEvent,
    DelayEvent,
    DeltaEvent,
    FailEvent,
    FileDeltaEvent,
    FinishEvent,
    PartDigest,
    ReasoningDeltaEvent,
    Scenario,
    ScenarioError,
    ScenarioEvent,
    ScenarioExpectations,
    ScenarioTurn,
    ServerToolCallEvent,
    ServerToolResultEvent,
    ToolCallDeltaEvent,
    UsageEvent,
    load_scenario,
    parse_scenario,
    part_digests,
)
from runport.core._schema import schema_errors, validate_output
from runport.core._strict import strict_schema
from runport.core._turn import TextPieces, TurnBuilder, parsed_tool_call, turn_receipt

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_NODES",
    "MAX_SCALAR_BYTES",
    "RUNTIME_POLICY_KEYS",
    "CitationEvent",
    "Contract",
    "ContractError",
    "DelayEvent",
    "DeltaEvent",
    "DocumentError",
    "FailEvent",
    "FileDeltaEvent",
    "FinishEvent",
    "HeldCache",
    "JsonLimitError",
    "PartDigest",
    "PartialJSON",
    "PartialJSONError",
    "PartialOutput",
    "ReasoningDeltaEvent",
    "RuntimePolicyWarning",
    "Scenario",
    "ScenarioError",
    "ScenarioEvent",
    "ScenarioExpectations",
    "ScenarioTurn",
    "ServerToolCallEvent",
    "ServerToolResultEvent",
    "StreamAssembler",
    "StreamGrammarError",
    "TextPieces",
    "ToolCallDeltaEvent",
    "TurnBuilder",
    "UsageEvent",
    "build_receipt",
    "compile_contract",
    "is_contract_document",
    "is_scenario_document",
    "is_secret_parameter",
    "is_text_schema",
    "load_contract",
    "load_document",
    "load_scenario",
    "normal_finish",
    "parse_contract",
    "parse_document",
    "parse_json_text",
    "parse_scenario",
    "parsed_tool_call",
    "part_digests",
    "redact_secrets",
    "schema_errors",
    "strict_schema",
    "turn_receipt",
    "validate_output",
]
