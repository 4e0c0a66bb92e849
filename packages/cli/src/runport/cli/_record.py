"""What ``runport record`` writes: one streamed turn as a ``runport.mock/v1`` scenario
(docs/batch.md).

Every event the adapter streamed becomes a scenario event — ``Delta`` a ``delta``,
``ToolCallDelta`` a ``tool_call_delta``, the receipt's usage a ``usage`` before the
``finish`` (with the receipt's finish reason), ``Failed`` a ``fail`` with its code and message —
so the mock replays the same stream and builds the same receipt. Redaction replaces values by
JSON pointer, in the inputs (``/inputs/…``, ``/context/…``) or the answer (``/output…``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from runport.cli._errors import CliError
from runport.contracts import (
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    Failed,
    StreamEvent,
    ToolCallDelta,
    canonical_json,
)

REDACTED = "[redacted]"


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def redact(document: Any, pointer: str) -> tuple[Any, bool]:
    """``document`` with the value at ``pointer`` (RFC 6901) replaced by ``"[redacted]"``, and
    whether the pointer named a value (a pointer to nothing changes nothing)."""
    if pointer == "":
        return REDACTED, True
    if not pointer.startswith("/"):
        raise CliError("usage", f"--redact takes a JSON pointer starting with '/', not {pointer!r}")
    tokens = [_unescape(token) for token in pointer[1:].split("/")]
    result = copy.deepcopy(document)
    parent = result
    for token in tokens[:-1]:
        parent = _child(parent, token)
        if parent is _MISSING:
            return document, False
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        parent[last] = REDACTED
        return result, True
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        parent[int(last)] = REDACTED
        return result, True
    return document, False


_MISSING: Any = object()


def _child(value: Any, token: str) -> Any:
    if isinstance(value, dict):
        return value.get(token, _MISSING)
    if isinstance(value, list) and token.isdigit() and int(token) < len(value):
        return value[int(token)]
    return _MISSING


def split_pointers(pointers: Sequence[str]) -> tuple[list[str], list[str]]:
    """The ``--redact`` pointers into those on the request and those on the answer."""
    request, answer = [], []
    for pointer in pointers:
        head = pointer.split("/")[1] if pointer.startswith("/") else ""
        if head in ("inputs", "context"):
            request.append(pointer)
        elif head == "output":
            answer.append(pointer[len("/output") :])
        else:
            raise CliError(
                "usage",
                f"--redact {pointer!r}: a pointer starts with /inputs, /context or /output",
            )
    return request, answer


def turn_events(events: Sequence[StreamEvent]) -> list[dict[str, Any]]:
    """The scenario events of a streamed turn, in order."""
    played: list[dict[str, Any]] = []
    for event in events:
        if isinstance(event, Delta):
            played.append({"kind": "delta", "text": event.text})
        elif isinstance(event, ToolCallDelta):
            played.append(
                {
                    "kind": "tool_call_delta",
                    "index": event.index,
                    "call_id": event.call_id,
                    "name": event.name,
                    "arguments_fragment": event.arguments_fragment,
                }
            )
        elif isinstance(event, Complete):
            played.extend(_finish(event.receipt))
        else:
            assert isinstance(event, Failed)
            played.append({"kind": "fail", "code": event.code, "message": event.message})
    return played


def _finish(receipt: ExecutionReceipt) -> list[dict[str, Any]]:
    ending: list[dict[str, Any]] = []
    if receipt.usage is not None:
        ending.append(
            {
                "kind": "usage",
                "input_tokens": receipt.usage.input_tokens,
                "output_tokens": receipt.usage.output_tokens,
            }
        )
    finish: dict[str, Any] = {"kind": "finish"}
    if receipt.finish_reason is not None:
        finish["finish_reason"] = receipt.finish_reason
    ending.append(finish)
    return ending


def redact_answer(
    events: list[dict[str, Any]], receipt: ExecutionReceipt | None, pointers: Sequence[str]
) -> list[dict[str, Any]]:
    """The events with the answer's text replaced by the redacted output's, as one delta."""
    if not pointers:
        return events
    if receipt is None or receipt.text is None:
        raise CliError(
            ErrorCode.DATA_INVALID, "--redact /output…: the run produced no answer to redact"
        )
    output: Any = receipt.output
    changed = False
    for pointer in pointers:
        output, hit = redact(output, pointer)
        changed = changed or hit
    if not changed:
        return events
    text = output if isinstance(output, str) else canonical_json(output).decode("utf-8")
    kept = [event for event in events if event["kind"] != "delta"]
    return [{"kind": "delta", "text": text}, *kept]


def input_document(
    inputs: dict[str, Any], context: dict[str, Any] | None, fixture: Any
) -> dict[str, Any]:
    document: dict[str, Any] = {"inputs": inputs}
    if context is not None:
        document["context"] = context
    if fixture is not None:
        document["fixture_output"] = fixture
    return document


def dump_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
