"""Each package's public surface is exactly what the issue names: adding or removing a public
name must be a deliberate change to this list."""

from __future__ import annotations

import importlib

import pytest

PUBLIC = {
    "runport.contracts": {
        "AdapterDescriptor",
        "CompiledInteraction",
        "Message",
        "ToolSpec",
        "ToolCall",
        "Usage",
        "ExecutionRequest",
        "ExecutionReceipt",
        "StreamEvent",
        "Delta",
        "ToolCallDelta",
        "Complete",
        "Failed",
        "Diagnostic",
        "OperationEnvelope",
        "ErrorCode",
        "canonical_json",
        "fingerprint",
        "MAX_INT_DIGITS",
        "MAX_JSON_DEPTH",
    },
    "runport.ports": {
        "RuntimeAdapter",
        "PortError",
        "Sink",
        "AsyncRuntimeAdapter",
        "AsyncSink",
        "deliver",
        "DEFAULT_DEADLINE_S",
        "DEFAULT_MAX_RESPONSE_BYTES",
        "check_byte_count",
        "check_seconds",
        "deadline_for",
        "distribution_version",
        "max_response_bytes_for",
    },
    "runport.core": {
        "Contract",
        "ContractError",
        "load_contract",
        "parse_contract",
        "compile_contract",
        "validate_output",
        "build_receipt",
        "parse_json_text",
        "StreamAssembler",
        "StreamGrammarError",
        "Scenario",
        "load_scenario",
        "load_document",
        "parse_document",
        "DocumentError",
        "MAX_DOCUMENT_BYTES",
        "MAX_DOCUMENT_NODES",
        "MAX_SCALAR_BYTES",
        "JsonLimitError",
        "ScenarioExpectations",
        "is_contract_document",
        "is_scenario_document",
        "is_text_schema",
        "schema_errors",
        "ScenarioTurn",
        "ScenarioEvent",
        "DeltaEvent",
        "ToolCallDeltaEvent",
        "DelayEvent",
        "UsageEvent",
        "FinishEvent",
        "FailEvent",
        "parse_scenario",
        "ScenarioError",
    },
    "runport.mock": {
        "AsyncEmitter",
        "AsyncFunctionRuntime",
        "AsyncHandler",
        "AsyncScriptedRuntime",
        "Emitter",
        "FunctionRuntime",
        "Handler",
        "RuntimeStats",
        "ScriptedRuntime",
        "TurnUsageError",
        "create_adapter",
    },
    "runport.http": {
        "DEFAULT_ASYNC_LIMITS",
        "DEFAULT_TIMEOUT",
        "MAX_RETRY_AFTER_MS",
        "PROVIDER_TEXT_LIMIT",
        "AsyncHTTPAdapter",
        "ClientT",
        "Codec",
        "CodecCarrier",
        "DecoderFactory",
        "DriverOptions",
        "HTTPAdapter",
        "HTTPRequest",
        "JSONAPICodec",
        "JSONTurnDecoder",
        "SSETurnDecoder",
        "TextPieces",
        "TurnBuilder",
        "ResponseDecoder",
        "SSEDecoder",
        "ServerSentEvent",
        "check_json_text",
        "checked_api_key",
        "encode_json",
        "error_from_words",
        "provider_text",
        "redact_url",
        "retry_after_ms",
        "status_error",
        "transport_error",
        "error_message",
        "json_headers",
        "json_object",
        "parsed_tool_call",
        "reads_as_events",
        "require",
        "turn_receipt",
    },
    "runport.anthropic": {
        "ANSWER_TOOL",
        "ANTHROPIC_VERSION",
        "DEFAULT_BASE_URL",
        "DEFAULT_MAX_TOKENS",
        "AnthropicMessagesAdapter",
        "AsyncAnthropicMessagesAdapter",
        "create_adapter",
    },
    "runport.gemini": {"DEFAULT_BASE_URL", "AsyncGeminiAdapter", "GeminiAdapter", "create_adapter"},
    "runport.openai": {
        "AsyncOpenAIChatAdapter",
        "OpenAIChatAdapter",
        "ResponseFormatMode",
        "DEFAULT_MAX_RESPONSE_BYTES",
        "DEFAULT_TIMEOUT",
        "create_adapter",
    },
    "runport.conformance": {
        "CASES",
        "AsyncRuntimeAdapterConformance",
        "BlackBoxUpstream",
        "CallerStop",
        "Case",
        "ConformanceUsageError",
        "Fault",
        "Harness",
        "RuntimeAdapterConformance",
        "ScenarioUpstream",
        "ScriptedUpstream",
        "StreamViolation",
        "Upstream",
        "check_stream",
        "run_conformance",
    },
    "runport.application": {
        "execute_contract",
        "create_adapter",
        "define_contract",
        "output_as",
        "adapter_entry_points",
        "AdapterNotFoundError",
        "ADAPTER_GROUP",
        "Fallback",
        "RunError",
        "RunOptions",
        "AsyncFallback",
        "BridgeUsageError",
        "CallerGone",
        "EventStream",
        "aexecute_contract",
        "arun",
        "arun_stream",
        "astream",
        "to_async",
        "to_sync",
        "RunPartial",
        "RunResult",
        "Tool",
        "repair_history",
        "run",
        "run_stream",
    },
    "runport.cli": {"main"},
    "runport.otel": {"Traced", "TracedAdapter", "AsyncTracedAdapter"},
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_all_lists_exactly_the_public_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert set(module.__all__) == PUBLIC[module_name]
    assert len(module.__all__) == len(set(module.__all__))
    for name in module.__all__:
        assert hasattr(module, name), f"{module_name}.{name} is in __all__ but missing"
    exported = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith(module_name)
    }
    assert exported <= set(module.__all__), (
        f"public but not in __all__: {exported - set(module.__all__)}"
    )


def test_runport_is_a_namespace_package() -> None:
    import runport

    assert getattr(runport, "__file__", None) is None
    assert len(list(runport.__path__)) >= 6
