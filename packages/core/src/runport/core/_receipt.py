from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from runport.contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    ToolCall,
    Usage,
    fingerprint,
)
from runport.core._schema import is_valid

_UNSET: Any = object()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json_text(text: str) -> tuple[bool, JsonValue]:
    """``(True, value)`` when ``text`` is one strict JSON document, else ``(False, text)``.

    Strict: ``NaN`` and the infinities, which Python's ``json`` would accept, are not JSON.
    """
    try:
        return True, json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        return False, text


def is_text_schema(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "string"


def build_receipt(
    request: ExecutionRequest,
    *,
    adapter: AdapterDescriptor,
    text: str | None = None,
    tool_calls: Sequence[ToolCall] = (),
    finish_reason: str | None = None,
    usage: Usage | None = None,
    output: JsonValue = _UNSET,
) -> ExecutionReceipt:
    """The receipt of one turn, derived the same way by every adapter (docs/wire-types.md).

    ``output`` is derived from ``text`` by the text/structured rule unless given explicitly
    (deterministic runtimes only). A turn with tool calls has ``output_schema_valid = None``;
    one with only tool calls has ``output = None``.
    """
    schema = request.interaction.output_schema
    text = text or None
    parsed_ok = True
    if output is _UNSET:
        if text is None:
            output = None
        elif is_text_schema(schema):
            output = text
        else:
            parsed_ok, output = parse_json_text(text)
    valid = None if tool_calls else parsed_ok and is_valid(schema, output)
    return ExecutionReceipt(
        adapter=adapter,
        request_fingerprint=fingerprint(request.interaction),
        output_fingerprint=fingerprint(output),
        output=output,
        output_schema_valid=valid,
        text=text,
        tool_calls=list(tool_calls) or None,
        finish_reason=finish_reason,
        usage=usage,
    )
