"""``openai-responses``: a played case as OpenAI's Responses API sends it — typed
output items in an event stream (``event: response.output_item.added``, the item's deltas,
``response.output_item.done``) ending with one of ``response.completed``,
``response.incomplete`` or ``response.failed``; or one response object.

How a case plays: each reasoning block is a ``reasoning`` item (its thoughts the deltas of one
summary part, its signature the item's ``encrypted_content``, given with the finished item);
each run of text is a ``message`` item with one ``output_text`` part; each call is a
``function_call`` item (announced by ``output_item.added``, its fragments
``response.function_call_arguments.delta``). A ``length`` finish is ``response.incomplete``
(``max_output_tokens``), ``content_filter`` likewise; any other turn is ``response.completed``.
An error frame is an ``error`` event for a server error, and ``response.failed`` (the response
object with its ``error``) for any other code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Final

from runport.conformance._cases import (
    Call,
    Case,
    Cite,
    Generated,
    ServerTool,
    Text,
    Thought,
    UsageStep,
    block_numbers,
    block_signature,
    thought_blocks,
)
from runport.conformance._protocols._request_shape import responses_shape, shape_problems
from runport.conformance._rewrites import calls_in_blocks
from runport.conformance._wire_protocol import (
    Frame,
    Refusal,
    Transcript,
    WireContext,
    WireProtocol,
    WireRequest,
    json_bytes,
)
from runport.contracts import ErrorCode, ExecutionRequest

__all__ = ["OpenAIResponses", "reasoning_items", "sent_back_problem"]

RESPONSE_ID: Final = "resp_runport_conformance"
CREATED: Final = 1_700_000_000
_INCOMPLETE: Final = {"length": "max_output_tokens", "content_filter": "content_filter"}
_FAILED_CODES: Final = {
    ErrorCode.RUNTIME_RATE_LIMITED: "rate_limit_exceeded",
    ErrorCode.RUNTIME_PERMANENT: "invalid_prompt",
}
"""An error frame's code as ``response.failed`` says it (a server error is an ``error``
event instead)."""


def responses_reasoning_id(number: int) -> str:
    """The id of a played case's reasoning block ``number`` as a ``reasoning`` item."""
    return f"rs_runport_conformance_{number}"


# -- frames ------------------------------------------------------------------------------------


class _Events:
    """Numbers the events of one stream (``sequence_number``, as the API does)."""

    def __init__(self) -> None:
        self.number = 0

    def __call__(self, kind: str, **fields: Any) -> bytes:
        value = {"type": kind, "sequence_number": self.number, **fields}
        self.number += 1
        return b"event: " + kind.encode() + b"\ndata: " + json_bytes(value) + b"\n\n"


def _response(
    model: str, status: str, output: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "store": False,
        "temperature": 0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        **extra,
    }


def _usage(case: Case) -> dict[str, Any] | None:
    step = next((s for s in case.steps if isinstance(s, UsageStep)), None)
    if step is None:
        return None
    return {
        "input_tokens": step.input_tokens,
        "input_tokens_details": {"cached_tokens": step.cache_read},
        "output_tokens": step.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": step.input_tokens + step.output_tokens,
    }


def _error_body(marker: str, kind: str, code: str) -> bytes:
    error = {"message": f"{marker} scripted {kind}", "type": kind, "param": None, "code": code}
    return json_bytes({"error": error})


def _failed_code(case: Case) -> str | None:
    """The ``response.failed`` error code of a case whose error frame is one (else ``None``:
    an ``error`` event)."""
    fault = case.fault
    if fault is None or fault.kind != "error_frame":
        return None
    return _FAILED_CODES.get(fault.code)


def _ending(case: Case) -> tuple[str, dict[str, Any]]:
    """``(status, extra response fields)`` of the turn's last event."""
    reason = _INCOMPLETE.get(case.finish_reason or "")
    if reason is not None:
        return "incomplete", {"incomplete_details": {"reason": reason}}
    return "completed", {}


# -- items -------------------------------------------------------------------------------------


def reasoning_items(case: Case) -> tuple[dict[str, Any], ...]:
    """The case's reasoning blocks as the finished ``reasoning`` items the API gives (and a
    stateless client must send back: id and ``encrypted_content`` intact)."""
    items: list[dict[str, Any]] = []
    for number, block in enumerate(thought_blocks(case)):
        text = "".join(step.text for step in block)
        item: dict[str, Any] = {
            "id": responses_reasoning_id(number),
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}] if text else [],
        }
        signature = block_signature(block)
        if signature is not None:
            item["encrypted_content"] = signature
        items.append(item)
    return tuple(items)


def _call_id(step: Call) -> str:
    return step.call_id or f"call_{step.index}"


def _items(case: Case) -> list[tuple[str, Any, list[Any]]]:
    """The played case as output items: ``(kind, key, steps)`` runs, in order — a reasoning
    block (key: its number), a run of text (with the citations after it: its annotations), one
    call (key: its index), a server tool's item (key: its id), a generated image."""
    runs: list[tuple[str, Any, list[Any]]] = []
    for number, (step, thought) in enumerate(
        zip(case.steps, block_numbers(case.steps), strict=True)
    ):
        if isinstance(step, UsageStep) or (isinstance(step, Text) and not step.text):
            continue
        if isinstance(step, Cite):
            if not runs or runs[-1][0] != "message":
                raise ValueError(f"{case.name}: a citation with no text before it to annotate")
            runs[-1][2].append(step)
            continue
        key: Any
        if isinstance(step, ServerTool):
            kind, key = "web_search_call", step.call_id
        elif isinstance(step, Generated):
            kind, key = "image_generation_call", number
        elif isinstance(step, Thought):
            kind, key = "reasoning", thought
        elif isinstance(step, Text):
            kind, key = "message", None
        else:
            kind, key = "function_call", step.index
        if runs and runs[-1][0] == kind and runs[-1][1] == key:
            runs[-1][2].append(step)
        else:
            runs.append((kind, key, [step]))
    return runs


def _done_item(kind: str, key: Any, steps: list[Any], position: int, case: Case) -> dict[str, Any]:
    if kind == "reasoning":
        return dict(reasoning_items(case)[key])
    if kind == "message":
        text = "".join(step.text for step in steps if isinstance(step, Text))
        notes = [_annotation(step) for step in steps if isinstance(step, Cite)]
        return {
            "id": f"msg_runport_conformance_{position}",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": text, "annotations": notes, "logprobs": []}
            ],
        }
    first = steps[0]
    if kind == "web_search_call":
        action = first.input["action"]
        return {"id": first.call_id, "type": kind, "status": "completed", "action": action}
    if kind == "image_generation_call":
        return {
            "id": f"ig_runport_conformance_{position}",
            "type": kind,
            "status": "completed",
            "output_format": first.media_type.removeprefix("image/"),
            "result": first.data,
        }
    return {
        "id": f"fc_runport_conformance_{position}",
        "type": "function_call",
        "status": "completed",
        "arguments": "".join(step.fragment for step in steps),
        "call_id": _call_id(first),
        "name": first.name,
    }


def _annotation(step: Cite) -> dict[str, Any]:
    """A citation as the API annotates ``output_text``: character indexes into the part."""
    return {
        "type": "url_citation",
        "start_index": step.start,
        "end_index": step.end,
        "url": step.url,
        "title": step.title,
    }


def _item_frames(
    event: _Events, kind: str, steps: list[Any], position: int, done: dict[str, Any]
) -> list[tuple[bytes, int]]:
    """One item's frames, each with the progress events it carries."""
    item_id = done["id"]
    at = {"item_id": item_id, "output_index": position}
    pieces: list[tuple[bytes, int]] = []
    if kind == "reasoning":
        added = {"id": item_id, "type": "reasoning", "summary": []}
        pieces.append((event("response.output_item.added", output_index=position, item=added), 0))
        text = "".join(step.text for step in steps)
        if text:
            part = {"type": "summary_text", "text": ""}
            pieces.append(
                (
                    event(
                        "response.reasoning_summary_part.added", **at, summary_index=0, part=part
                    ),
                    0,
                )
            )
            for step in steps:
                if step.text:
                    delta = event(
                        "response.reasoning_summary_text.delta",
                        **at,
                        summary_index=0,
                        delta=step.text,
                    )
                    pieces.append((delta, 1))
            part = {"type": "summary_text", "text": text}
            pieces.append(
                (
                    event("response.reasoning_summary_text.done", **at, summary_index=0, text=text),
                    0,
                )
            )
            pieces.append(
                (event("response.reasoning_summary_part.done", **at, summary_index=0, part=part), 0)
            )
    elif kind == "message":
        added = {**done, "status": "in_progress", "content": []}
        pieces.append((event("response.output_item.added", output_index=position, item=added), 0))
        empty: dict[str, Any] = {
            "type": "output_text",
            "text": "",
            "annotations": [],
            "logprobs": [],
        }
        pieces.append((event("response.content_part.added", **at, content_index=0, part=empty), 0))
        noted = 0
        for step in steps:
            if isinstance(step, Cite):
                added_note = event(
                    "response.output_text.annotation.added",
                    **at,
                    content_index=0,
                    annotation_index=noted,
                    annotation=_annotation(step),
                )
                pieces.append((added_note, 1))
                noted += 1
                continue
            delta = event(
                "response.output_text.delta", **at, content_index=0, delta=step.text, logprobs=[]
            )
            pieces.append((delta, 1))
        text = done["content"][0]["text"]
        pieces.append(
            (event("response.output_text.done", **at, content_index=0, text=text, logprobs=[]), 0)
        )
        pieces.append(
            (
                event("response.content_part.done", **at, content_index=0, part=done["content"][0]),
                0,
            )
        )
    elif kind in ("web_search_call", "image_generation_call"):
        # the tool's call and result (or the image) come with the finished item
        added = {"id": item_id, "type": kind, "status": "in_progress"}
        pieces.append((event("response.output_item.added", output_index=position, item=added), 0))
        carried = 2 if kind == "web_search_call" else 1
        pieces.append(
            (event("response.output_item.done", output_index=position, item=done), carried)
        )
        return pieces
    else:
        added = {**done, "status": "in_progress", "arguments": ""}
        pieces.append((event("response.output_item.added", output_index=position, item=added), 1))
        for step in steps:
            if step.fragment:
                delta = event("response.function_call_arguments.delta", **at, delta=step.fragment)
                pieces.append((delta, 1))
        pieces.append(
            (event("response.function_call_arguments.done", **at, arguments=done["arguments"]), 0)
        )
    pieces.append((event("response.output_item.done", output_index=position, item=done), 0))
    return pieces


def _rendered(case: Case, model: str, marker: str) -> tuple[Transcript, bytes]:
    """The case as a streamed answer (``"stream": true``), and its error frame (numbered
    after the items, as the API numbers every event of a stream)."""
    event = _Events()
    opening = [
        event("response.created", response=_response(model, "in_progress", [])),
        event("response.in_progress", response=_response(model, "in_progress", [])),
    ]
    steps: list[Frame] = []
    output: list[dict[str, Any]] = []
    for position, (kind, key, run) in enumerate(_items(case)):
        done = _done_item(kind, key, run, position, case)
        output.append(done)
        steps += [
            Frame(data, carried) for data, carried in _item_frames(event, kind, run, position, done)
        ]
    status, extra = _ending(case)
    final = _response(model, status, output, usage=_usage(case), **extra)
    closing = [event(f"response.{status}", response=final)]
    failed = _failed_code(case)
    if failed is not None:
        error = {"code": failed, "message": f"{marker} scripted {failed}"}
        error_frame = event(
            "response.failed",
            response=_response(model, "failed", output, error=error),
        )
    else:
        error_frame = event(
            "error", code="server_error", message=f"{marker} scripted server_error", param=None
        )
    return Transcript(steps, opening=opening, closing=closing), error_frame


def _output(case: Case) -> list[dict[str, Any]]:
    return [
        _done_item(kind, key, run, position, case)
        for position, (kind, key, run) in enumerate(_items(case))
    ]


def _searched(step: ServerTool) -> ServerTool:
    """A web search as a ``web_search_call`` item says it (idempotent)."""
    metadata = {"openai-responses": {"type": "web_search_call"}}
    if isinstance(step.input, dict) and "action" in step.input:
        return step
    query = step.input.get("query") if isinstance(step.input, dict) else None
    return replace(
        step,
        input={"action": {"type": "search", "query": query}},
        output={"status": "completed"},
        call_metadata=metadata,
        result_metadata=metadata,
    )


class OpenAIResponses(WireProtocol):
    """The Responses API: ``POST {base_url}/responses`` under ``/v1``; typed output items,
    ``response.completed`` / ``response.incomplete`` the completion marker, reasoning items
    kept one part per block and sent back (a stateless run: ``store: false``) with their ids
    and encrypted content intact; a web search a ``web_search_call`` item, a citation an
    ``output_text`` annotation (``annotation.added`` streamed), an image an
    ``image_generation_call`` item."""

    name: ClassVar[str] = "openai-responses"
    endpoint: ClassVar[str] = "POST {base_url}/responses"
    root: ClassVar[str] = "/v1"
    features: ClassVar[frozenset[str]] = frozenset(
        {
            "incomplete_turns",
            "coded_error_frames",
            "cut_turns",
            "cut_calls",
            "refusals",
            "cache_usage",
            "citations",
            "server_tools",
            "files",
        }
    )

    def request_problems(self, request: WireRequest, sent: ExecutionRequest) -> list[str]:
        return shape_problems(responses_shape(request.json), sent)

    def recognise(self, request: WireRequest) -> bool | str:
        if not request.path.rstrip("/").endswith("/responses"):
            return self.endpoint
        return isinstance(request.json, Mapping) and request.json.get("stream") is True

    def check(self, request: WireRequest, case: Case) -> Refusal | None:
        problem = sent_back_problem(request.json, case)
        if problem is None:
            return None
        error = {
            "message": problem,
            "type": "invalid_request_error",
            "param": "input",
            "code": None,
        }
        return Refusal(400, json_bytes({"error": error}), problem)

    def play(self, case: Case) -> Case:
        """Calls in blocks; no finish reason on the wire: a completed turn is ``tool_calls``
        when it made calls, else ``stop``; an incomplete one names its reason. A web search
        is a ``web_search_call`` item: its call the item's ``action``, its result the item's
        ``status`` (the item carries no results), both kept as ``{"openai-responses":
        {"type": "web_search_call"}}``."""
        case = super().play(calls_in_blocks(case))
        searched = tuple(
            _searched(step) if isinstance(step, ServerTool) else step for step in case.steps
        )
        if searched != case.steps:
            case = replace(case, steps=searched)
        reason = case.finish_reason
        if reason in ("stop", "tool_calls"):
            reason = "tool_calls" if any(isinstance(s, Call) for s in case.steps) else "stop"
            if reason != case.finish_reason:
                case = replace(case, finish_reason=reason)
        return case

    def reasoning_metadata(
        self, number: int, block: Sequence[Thought], signature: str | None
    ) -> dict[str, Any] | None:
        item: dict[str, Any] = {"id": responses_reasoning_id(number)}
        if signature is not None:
            item["encrypted_content"] = signature
        return {"openai-responses": item}

    def sent_back(self, case: Case) -> Any:
        return reasoning_items(case) or None

    def stream(self, case: Case, context: WireContext) -> Transcript:
        return _rendered(case, context.model, context.marker)[0]

    def body(self, case: Case, context: WireContext) -> bytes:
        status, extra = _ending(case)
        body = _response(context.model, status, _output(case), usage=_usage(case), **extra)
        return json_bytes(body)

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        return _rendered(case, context.model, context.marker)[1]

    def error_response(self, case: Case, context: WireContext) -> tuple[int, bytes]:
        failed = _failed_code(case)
        if failed is None:
            return super().error_response(case, context)
        error = {"code": failed, "message": f"{context.marker} scripted {failed}"}
        return 200, json_bytes(_response(context.model, "failed", _output(case), error=error))

    def garbage_frame(self, context: WireContext) -> bytes:
        marker = context.marker.encode()
        return b'event: response.output_text.delta\ndata: {"type": ' + marker + b"\n\n"

    def error_body(self, status: int, context: WireContext) -> bytes:
        if status == 429:
            return _error_body(context.marker, "requests", "rate_limit_exceeded")
        return _error_body(context.marker, "server_error", "server_error")


# -- what a stateless request must send back ------------------------------------------------


def sent_back_problem(request: Any, case: Case) -> str | None:
    """Why the API would refuse ``request`` when it must carry ``case.sends_back`` — the
    reasoning items of the turn that made the calls, before its ``function_call`` items,
    each with its id and ``encrypted_content`` intact (with ``store: false`` nothing lives at
    the provider: an item sent back by id alone is not found, one whose encrypted content
    changed cannot be verified) — else ``None``."""
    if not case.sends_back:
        return None
    items = request.get("input") if isinstance(request, dict) else None
    items = [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
    calls = [n for n, item in enumerate(items) if item.get("type") == "function_call"]
    if not calls:
        return "input: the function_call items of the turn that made the calls are missing"
    reasoning = {
        item.get("id"): (n, item) for n, item in enumerate(items) if item.get("type") == "reasoning"
    }
    for want in case.sends_back:
        found = reasoning.get(want["id"])
        if found is None:
            return (
                f"input: the reasoning item {want['id']!r} that preceded the function calls is "
                "missing (a stateless run must send it back, encrypted_content intact)"
            )
        number, got = found
        if number > calls[0]:
            return (
                f"input.{number}: the reasoning item {want['id']!r} must precede its function_call"
            )
        if "encrypted_content" in want and got.get("encrypted_content") is None:
            return (
                f"Item with id {want['id']!r} not found. Items are not persisted when `store` is "
                "set to false. Try again with `store` set to true, or remove this item from "
                "your input."
            )
        if got.get("encrypted_content") != want.get("encrypted_content"):
            return f"The encrypted content for item {want['id']} could not be verified."
        if not isinstance(got.get("summary"), list):
            return f"input.{number}.summary: Missing required parameter: 'input[{number}].summary'."
    return None
