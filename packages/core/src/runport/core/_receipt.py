from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from runport.contracts import (
    MAX_JSON_DEPTH,
    AdapterDescriptor,
    Citation,
    ExecutionReceipt,
    ExecutionRequest,
    FilePart,
    Finish,
    ReasoningPart,
    ServerToolCall,
    ServerToolResult,
    ToolCall,
    Usage,
    fingerprint,
)
from runport.core._document import JsonLimitError, NotJsonError, bounded_json
from runport.core._request_fingerprint import request_fingerprint
from runport.core._schema import is_valid

_UNSET: Any = object()


def parse_json_text(text: str) -> tuple[bool, JsonValue]:
    """``(True, value)`` when ``text`` is one strict JSON document, else ``(False, text)``.

    Strict: ``NaN`` and the infinities, which Python's ``json`` would accept, are not JSON, and
    neither is a lone surrogate escape (``"\\ud800"``: not Unicode text). JSON past the bounds
    raises :class:`JsonLimitError` rather than ``RecursionError`` or ``ValueError``.
    """
    try:
        value = bounded_json(text)
    except (ValueError, NotJsonError):
        return False, text
    # Nesting needs an opening bracket per level: with few of them the walk is skipped.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _deeper_than_bound(value):
        raise JsonLimitError(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep")
    if "\\u" in text and not _unicode(value):
        return False, text
    return True, value


def _deeper_than_bound(value: object) -> bool:
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_JSON_DEPTH:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _unicode(value: object) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def normal_finish(reason: str | None, table: Mapping[str, Finish]) -> Finish | None:
    """A provider's finish reason normalised by its protocol's ``table`` (docs/runs.md, "per
    finish"); a word the table does not know is ``other``, and no reason is ``None``."""
    if reason is None:
        return None
    return table.get(reason, "other")


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
    reasoning: Sequence[ReasoningPart] = (),
    finish: Finish | None = None,
    server_tools: Sequence[ServerToolCall | ServerToolResult] = (),
    citations: Sequence[Citation] = (),
    files: Sequence[FilePart] = (),
    provider_metadata: dict[str, JsonValue] | None = None,
) -> ExecutionReceipt:
    """The receipt of one turn, derived the same way by every adapter (docs/wire-types.md).

    ``output`` is derived from ``text`` by the text/structured rule unless given explicitly
    (deterministic runtimes only). A turn with tool calls has ``output_schema_valid = None``;
    one with only tool calls has ``output = None``. ``reasoning`` is kept beside the answer,
    never in ``text``, ``output`` or the output fingerprint. Text or tool arguments that are
    JSON past the bounds raise :class:`JsonLimitError`, for the adapter to fail the call with
    its code. ``finish`` is ``finish_reason`` normalised (``normal_finish``). What the
    provider did itself (``server_tools``, ``citations``, ``files``) and what it sent that
    runport has no type for (``provider_metadata``) are kept beside the answer, never in
    ``output`` (adr/0055-what-the-provider-did-itself.md).
    """
    schema = request.interaction.output_schema
    text = text or None
    parsed_ok = True
    derived = output is _UNSET
    if derived:
        if text is None:
            output = None
        elif is_text_schema(schema):
            output = text
        else:
            parsed_ok, output = parse_json_text(text)
    valid = None if tool_calls else parsed_ok and is_valid(schema, output)
    parsed = derived and type(output) in (dict, list)
    receipt = ExecutionReceipt(
        adapter=adapter,
        request_fingerprint=request_fingerprint(request.interaction),
        output_fingerprint=fingerprint(output),
        output=None if parsed else output,
        output_schema_valid=valid,
        text=text,
        tool_calls=list(tool_calls) or None,
        finish_reason=finish_reason,
        usage=usage,
        reasoning=list(reasoning) or None,
        finish=finish,
        server_tools=list(server_tools) or None,
        citations=list(citations) or None,
        files=list(files) or None,
        provider_metadata=provider_metadata or None,
    )
    if parsed:
        # Parsed from the text just now, it is JSON by construction: validating it again as
        # a ``JsonValue`` would walk every element (a millisecond for a few thousand values),
        # so every other field is validated and the output put in as parsed, as a tool
        # call's arguments are.
        return receipt.model_copy(update={"output": output})
    return receipt
