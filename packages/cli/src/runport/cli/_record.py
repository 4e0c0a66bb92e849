"""What ``runport record`` writes: one streamed turn as a ``runport.mock/v1`` scenario
(docs/batch.md).

Every event the adapter streamed becomes a scenario event — ``Delta`` a ``delta``,
``ReasoningDelta`` a ``reasoning_delta`` (the last piece of each of the receipt's reasoning
blocks carrying the block's signature, when the provider gave one), ``ToolCallDelta`` a
``tool_call_delta``, what the provider did itself its own kind (``ServerToolCall`` a
``server_tool_call`` and ``ServerToolResult`` a ``server_tool_result``, their provider metadata
kept, ``Citation`` a ``citation``, ``FileDelta`` a ``file_delta``), the receipt's usage
(cache counts too) a ``usage`` before the ``finish`` (with the receipt's finish reason, and its
``finish`` where that is another word), ``Failed`` a ``fail`` with its code and message — so
the mock replays the same stream and builds the same receipt. Of a reasoning block's provider
metadata only its signature is kept (the mock's ``{"mock": {"signature": ...}}``); a redacted
block (no text) is not recorded. Redaction replaces values by JSON pointer, in the inputs
(``/inputs/…``, ``/context/…``) or the answer (``/output…``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from runport.cli._errors import CliError
from runport.contracts import (
    Citation,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    Failed,
    FileDelta,
    ReasoningDelta,
    ReasoningPart,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
    ToolCallDelta,
    canonical_json,
)
from runport.core import MAX_SCALAR_BYTES

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


_SIGNATURE_KEYS = ("signature", "thoughtSignature")


def signature_of(part: ReasoningPart) -> str | None:
    """The signature a provider put on a reasoning block (Anthropic's ``signature``, Gemini's
    ``thoughtSignature``, the mock's own), if any."""
    for value in (part.provider_metadata or {}).values():
        if isinstance(value, dict):
            for key in _SIGNATURE_KEYS:
                found = value.get(key)
                if isinstance(found, str) and found:
                    return found
    return None


def _disagrees(problem: str) -> CliError:
    return CliError(
        ErrorCode.RUNTIME_INVALID_RESPONSE,
        f"the adapter's receipt disagrees with its own stream: {problem}",
    )


def block_ends(events: Sequence[StreamEvent]) -> dict[int, str]:
    """Which ``ReasoningDelta`` (by its place in ``events``) ends a signed reasoning block of
    the turn's receipt, and the signature. The pieces must spell the receipt's blocks (those
    with text) in order, else the adapter broke the law (its stream is not its receipt)."""
    receipt = next((e.receipt for e in events if isinstance(e, Complete)), None)
    if receipt is None:
        return {}
    blocks = iter([part for part in receipt.reasoning or [] if part.text])
    current = next(blocks, None)
    filled = ""
    ends: dict[int, str] = {}
    for place, event in enumerate(events):
        if not isinstance(event, ReasoningDelta):
            continue
        if current is None:
            raise _disagrees("reasoning was streamed beyond the receipt's reasoning blocks")
        filled += event.text
        if filled == current.text:
            signature = signature_of(current)
            if signature is not None:
                ends[place] = signature
            current, filled = next(blocks, None), ""
        elif not current.text.startswith(filled):
            raise _disagrees("the streamed reasoning differs from the receipt's reasoning")
    if current is not None:
        raise _disagrees("the receipt has reasoning the stream never sent")
    return ends


def turn_events(events: Sequence[StreamEvent]) -> list[dict[str, Any]]:
    """The scenario events of a streamed turn, in order."""
    played: list[dict[str, Any]] = []
    ends = block_ends(events)
    for place, event in enumerate(events):
        if isinstance(event, Delta):
            played.append({"kind": "delta", "text": event.text})
        elif isinstance(event, ReasoningDelta):
            thought: dict[str, Any] = {"kind": "reasoning_delta", "text": event.text}
            if place in ends:
                thought["signature"] = ends[place]
            played.append(thought)
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
        elif isinstance(event, ServerToolCall | ServerToolResult | Citation | FileDelta):
            played.append(provided_event(event))
        elif isinstance(event, Complete):
            played.extend(_finish(event.receipt))
        else:
            assert isinstance(event, Failed)
            played.append({"kind": "fail", "code": event.code, "message": event.message})
    return played


def provided_event(
    event: ServerToolCall | ServerToolResult | Citation | FileDelta,
) -> dict[str, Any]:
    """The scenario event of what the provider did itself: the event's own fields under the
    scenario's kind (a result's ``name`` is its call's, so the scenario leaves it out). A
    generated file longer than a scenario file's strings may be is refused, since the
    recording could not be read back."""
    fields = event.model_dump(mode="json", exclude={"kind"})
    if isinstance(event, ServerToolCall):
        return {"kind": "server_tool_call", **fields}
    if isinstance(event, ServerToolResult):
        del fields["name"]
        return {"kind": "server_tool_result", **fields}
    if isinstance(event, Citation):
        return {"kind": "citation", **fields}
    if len(event.data) > MAX_SCALAR_BYTES:
        raise CliError(
            ErrorCode.DATA_INVALID,
            f"a generated {event.media_type} file of {len(event.data):,} base64 characters is "
            f"past what a scenario file's strings may hold ({MAX_SCALAR_BYTES:,})",
        )
    return {"kind": "file_delta", **fields}


def _finish(receipt: ExecutionReceipt) -> list[dict[str, Any]]:
    ending: list[dict[str, Any]] = []
    if receipt.usage is not None:
        usage: dict[str, Any] = {
            "kind": "usage",
            "input_tokens": receipt.usage.input_tokens,
            "output_tokens": receipt.usage.output_tokens,
        }
        for count in ("reasoning_tokens", "cache_read_tokens", "cache_write_tokens"):
            value = getattr(receipt.usage, count)
            if value is not None:
                usage[count] = value
        ending.append(usage)
    finish: dict[str, Any] = {"kind": "finish"}
    if receipt.finish_reason is not None:
        finish["finish_reason"] = receipt.finish_reason
    if receipt.finish is not None and receipt.finish != receipt.finish_reason:
        finish["finish"] = receipt.finish  # the provider's word kept, runport's beside it
    ending.append(finish)
    return ending


def comparable(receipt: ExecutionReceipt | None) -> dict[str, Any] | None:
    """The receipt without the adapter that made it: what a replay must reproduce. Its
    reasoning is compared as the mock can replay it: the joined text and the signatures, in
    order (block boundaries without a signature, other provider metadata and redacted blocks
    are not in a scenario). What the provider sent that runport has no type for (the receipt's
    ``provider_metadata``, adr/0054-nothing-a-provider-sends-is-dropped.md) has no scenario
    event either, so it is not compared; ``kept_unknown`` counts it for the command to say."""
    if receipt is None:
        return None
    kept = receipt.model_dump(mode="json", exclude={"adapter", "reasoning", "provider_metadata"})
    parts = receipt.reasoning or []
    if parts:
        kept["reasoning"] = {
            "text": "".join(part.text for part in parts),
            "signatures": [s for s in map(signature_of, parts) if s is not None],
        }
    return kept


def kept_unknown(receipt: ExecutionReceipt | None) -> int:
    """How many objects of kinds runport does not read the receipt kept (so are not recorded)."""
    if receipt is None or not receipt.provider_metadata:
        return 0
    kept = [
        value.get("unknown")
        for value in receipt.provider_metadata.values()
        if isinstance(value, dict)
    ]
    return sum(len(items) for items in kept if isinstance(items, list))


def redacted_blocks(receipt: ExecutionReceipt | None) -> int:
    """How many reasoning blocks of ``receipt`` have no text (redacted), so are not recorded."""
    return 0 if receipt is None else sum(1 for p in receipt.reasoning or [] if not p.text)


def redact_answer(
    events: list[dict[str, Any]], receipt: ExecutionReceipt | None, pointers: Sequence[str]
) -> list[dict[str, Any]]:
    """The events with the answer's text replaced by the redacted output's, as one delta, and
    the reasoning left out (it may restate what was redacted)."""
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
    # the reasoning may restate the answer, so it goes with the answer's text
    kept = [event for event in events if event["kind"] not in ("delta", "reasoning_delta")]
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
