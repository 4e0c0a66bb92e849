"""The MCP tools: ``list_contracts`` and ``execute_contract`` over the official SDK's low-level
``Server`` (docs/cli.md).

The low-level server is used rather than the decorator-based one because the tool results
are shaped by hand: an operation envelope as structured content, and malformed calls as tool
errors whose text starts with a stable ``TQX_`` code a host can key on.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from pydantic import TypeAdapter

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from runport.application import (
    Catalog,
    SnapshotPace,
    aclose_adapter,
    aexecute_contract,
    close_adapter,
    to_async,
)
from runport.contracts import ErrorCode, OperationEnvelope, RunEvent
from runport.core import Contract
from runport.ports import AsyncRuntimeAdapter, RuntimeAdapter

LIST_CONTRACTS = "list_contracts"
EXECUTE_CONTRACT = "execute_contract"

AdapterFactory = Callable[[], RuntimeAdapter | AsyncRuntimeAdapter]
"""Builds the adapter for one call: an async one runs on the event loop, a sync one bridged.
A fresh adapter per call keeps calls independent: the scripted mock, for one, plays its
scenario from the first turn every time."""
_EXECUTE_KEYS = frozenset({"contract", "inputs", "context", "stream", "partial_output"})

_EXECUTE_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "contract": {"type": "string", "description": "the contract id (see list_contracts)"},
        "inputs": {
            "type": "object",
            "description": "the contract's inputs (its input_schema in list_contracts)",
        },
        "context": {
            "type": ["object", "null"],
            "description": "the contract's context values, if it declares any",
        },
        "stream": {
            "type": "boolean",
            "description": (
                "stream the run: every event (the model's reasoning as ReasoningDelta, the "
                "answer as Delta, a tool the provider ran itself as ServerToolCall and "
                "ServerToolResult, a cited source as Citation, a generated file as FileDelta) "
                "is sent as a progress notification (when the request carries a progress "
                "token) and kept in the envelope's stream_events"
            ),
        },
        "partial_output": {
            "type": "boolean",
            "description": (
                "with stream, a structured answer's OutputSnapshot (the answer parsed so far) "
                "follows each Delta that changed it, as a progress notification; the envelope "
                "is the same without them"
            ),
        },
    },
    "required": ["contract", "inputs"],
    "additionalProperties": False,
}

_LIST_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "contracts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "version": {"type": "string"},
                    "description": {"type": "string"},
                    "input_schema": {"type": "object"},
                },
                "required": ["id", "version", "description", "input_schema"],
            },
        }
    },
    "required": ["contracts"],
}


_ENVELOPE_SCHEMA: dict[str, Any] = OperationEnvelope.model_json_schema(mode="serialization")


class _Malformed(Exception):
    """The call's arguments are not what the tool takes: reported as a tool error."""


def _tool_error(code: str, message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=f"{code}: {message}")],
        is_error=True,
    )


def _envelope_result(envelope: OperationEnvelope) -> types.CallToolResult:
    """A not-ok envelope is still a normal result: the call itself was well formed, and the
    envelope's diagnostics are what the caller needs to act on."""
    payload = envelope.model_dump(mode="json")
    return types.CallToolResult(
        content=[types.TextContent(text=envelope.model_dump_json())],
        structured_content=payload,
    )


class _Call:
    """``execute_contract``'s arguments, checked."""

    def __init__(self, arguments: Mapping[str, Any] | None) -> None:
        args = dict(arguments or {})
        unknown = sorted(set(args) - _EXECUTE_KEYS)
        if unknown:
            raise _Malformed(f"unknown argument(s): {', '.join(unknown)}")
        contract = args.get("contract")
        if not isinstance(contract, str) or not contract:
            raise _Malformed("'contract' must be a contract id (a non-empty string)")
        if "inputs" not in args:
            raise _Malformed("'inputs' is required (an object; {} for none)")
        inputs = args["inputs"]
        if not isinstance(inputs, dict):
            raise _Malformed(f"'inputs' must be an object, not {_json_type(inputs)}")
        context = args.get("context")
        if context is not None and not isinstance(context, dict):
            raise _Malformed(f"'context' must be an object, not {_json_type(context)}")
        stream = args.get("stream", False)
        if not isinstance(stream, bool):
            raise _Malformed(f"'stream' must be a boolean, not {_json_type(stream)}")
        self.contract: str = contract
        self.inputs: dict[str, Any] = inputs
        self.context: dict[str, Any] | None = context
        partial_output = args.get("partial_output", False)
        if not isinstance(partial_output, bool):
            raise _Malformed(
                f"'partial_output' must be a boolean, not {_json_type(partial_output)}"
            )
        self.stream: bool = stream
        self.partial_output: bool = partial_output


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


class _Forwarder:
    """The async sink: each event goes out as a progress notification, awaited before the
    adapter reads further, so events leave in the order the adapter produced them and all of
    them before the result. A no-op notification when the request carried no progress token;
    the event still lands in the envelope's ``stream_events`` (an ``OutputSnapshot``, made
    from the ``Delta`` before it, goes out as progress only)."""

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        self._ctx = ctx
        self._sent = 0
        # each snapshot goes out whole: thinned, so that together they weigh what the answer
        # does times a constant, not times its length
        self._pace = SnapshotPace()

    async def __call__(self, event: RunEvent) -> None:
        for shown in self._pace(event):
            self._sent += 1
            await self._ctx.session.report_progress(
                self._sent, message=_EVENT.dump_json(shown).decode()
            )


_EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)


def create_server(
    catalog: Catalog,
    adapter: AdapterFactory | RuntimeAdapter | AsyncRuntimeAdapter,
    *,
    name: str = "runport",
    version: str = "",
) -> Server[Any]:
    """An MCP server offering ``catalog`` through ``list_contracts`` and ``execute_contract``.

    ``adapter`` is one adapter every call shares — its connections kept alive from call to
    call, and closed when the server's run ends — or a factory called for each call (the
    scripted mock, so each call plays its scenario afresh). Each run happens on the session's
    event loop (``aexecute_contract``), so the session stays responsive (other calls,
    cancellation, notifications) and an async adapter's events reach the client with no
    thread hop; a sync adapter is bridged onto a worker thread (``to_async``).
    """
    shared: AsyncRuntimeAdapter | None
    factory: AdapterFactory | None
    if isinstance(adapter, AsyncRuntimeAdapter):
        shared, factory = adapter, None
    elif isinstance(adapter, RuntimeAdapter):
        shared, factory = to_async(adapter), None
    else:
        shared, factory = None, adapter

    @contextlib.asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            if shared is not None:
                await aclose_adapter(shared)

    ids = ", ".join(sorted(catalog)) or "none loaded"
    tools = [
        types.Tool(
            name=LIST_CONTRACTS,
            description="List the prompt contracts this server runs, with their input schemas.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            output_schema=_LIST_OUTPUT_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name=EXECUTE_CONTRACT,
            description=(
                "Run a prompt contract through the server's runtime adapter and return the "
                "operation envelope (ok, the execution receipt, diagnostics, fingerprints). "
                f"Contracts: {ids}."
            ),
            input_schema=_EXECUTE_INPUT_SCHEMA,
            output_schema=_ENVELOPE_SCHEMA,
        ),
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == LIST_CONTRACTS:
            listing = {"contracts": catalog.describe()}
            return types.CallToolResult(
                content=[types.TextContent(text=_compact(listing))],
                structured_content=listing,
            )
        if params.name == EXECUTE_CONTRACT:
            return await _execute(ctx, params.arguments)
        raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool: {params.name!r}")

    async def _execute(
        ctx: ServerRequestContext[Any], arguments: Mapping[str, Any] | None
    ) -> types.CallToolResult:
        try:
            call = _Call(arguments)
        except _Malformed as error:
            return _tool_error(ErrorCode.DATA_INVALID, str(error))
        contract = catalog.get(call.contract)
        if contract is None:
            return _tool_error(
                ErrorCode.CONTRACT_NOT_FOUND,
                f"no contract with id {call.contract!r} (known: {ids})",
            )
        if factory is None:
            assert shared is not None
            return _envelope_result(await _run(ctx, call, contract, shared))
        try:
            made = factory()
        except Exception as error:  # a factory failure is the server's, not the caller's
            # PortError and ScenarioError carry a stable code and a bare message.
            code = getattr(error, "code", ErrorCode.RUNTIME_UNAVAILABLE)
            message = getattr(error, "message", None) or str(error)
            return _tool_error(str(code), f"cannot start the adapter: {message}")
        runtime = made if isinstance(made, AsyncRuntimeAdapter) else to_async(made)
        try:
            return _envelope_result(await _run(ctx, call, contract, runtime))
        finally:
            if isinstance(made, AsyncRuntimeAdapter):
                await aclose_adapter(made)
            else:
                close_adapter(made)

    async def _run(
        ctx: ServerRequestContext[Any],
        call: _Call,
        contract: Contract,
        runtime: AsyncRuntimeAdapter,
    ) -> OperationEnvelope:
        # The run stays on the event loop: an async adapter streams with no thread hop per
        # event; a sync one is bridged. A client that cancels the call cancels this task, which
        # is a caller stop: the adapter closes its upstream and the dispatcher sends no result.
        return await aexecute_contract(
            contract,
            runtime,
            inputs=call.inputs,
            context=call.context,
            on_event=_Forwarder(ctx) if call.stream else None,
            partial_output=call.partial_output,
        )

    return Server(
        name,
        version=version,
        lifespan=lifespan,
        instructions=(
            "Call list_contracts to see the prompt contracts and their input schemas, then "
            "execute_contract with a contract id and its inputs. Pass stream: true (with a "
            "progress token) to receive every stream event as a progress notification."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
