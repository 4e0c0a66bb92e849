"""``anthropic-messages``: a played case as the Messages API sends it — typed
content blocks in an event stream ending with ``message_stop``, or one message object.

A JSON answer goes as the model gives it when the request forces a tool (``tool_choice``
``{"type": "tool", "name": …}``, how a structured answer is asked for through a tool): the
forced tool's ``input``, streamed as ``input_json_delta`` fragments with the model's spacing
(each Text step's ``wire``) and written without that spacing in the message body. Otherwise
it is a text block of the played text."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Final

from runport.conformance._cases import (
    Call,
    Case,
    Cite,
    Generated,
    ServerTool,
    Step,
    Text,
    Thought,
    UsageStep,
    block_numbers,
    thought_blocks,
)
from runport.conformance._protocols._request_shape import messages_shape, shape_problems
from runport.conformance._rewrites import calls_in_blocks, json_answer
from runport.conformance._wire_protocol import (
    Frame,
    Refusal,
    Transcript,
    WireContext,
    WireProtocol,
    WireRequest,
    json_bytes,
)
from runport.contracts import ExecutionRequest

__all__ = ["AnthropicMessages"]

MESSAGE_ID: Final = "msg_runport_conformance"
ANSWER_ID: Final = "toolu_runport_conformance_answer"
_SPLICE: Final = "RUNPORT-CONFORMANCE-ANSWER"


def _forced_tool(case: Case, request: Any) -> str | None:
    """The tool the request forces, when the case's answer can be its input."""
    choice = request.get("tool_choice") if isinstance(request, dict) else None
    if not isinstance(choice, dict) or choice.get("type") != "tool":
        return None
    name = choice.get("name")
    return name if isinstance(name, str) and name and json_answer(case) else None


def _event(name: str, value: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + json_bytes({"type": name, **value}) + b"\n\n"


def _error(marker: str, kind: str) -> bytes:
    return json_bytes(
        {"type": "error", "error": {"type": kind, "message": f"{marker} scripted {kind}"}}
    )


def _usage(case: Case) -> UsageStep | None:
    return next((step for step in case.steps if isinstance(step, UsageStep)), None)


def _input_usage(usage: UsageStep) -> dict[str, int]:
    """The input counts as the API writes them: ``input_tokens`` only the tokens after the
    last cache breakpoint, the cache's reads and writes beside it (the stream sends these in
    ``message_start`` only)."""
    counts = {"input_tokens": usage.input_tokens - usage.cache_read - usage.cache_write}
    if usage.cache_read or usage.cache_write:
        counts["cache_creation_input_tokens"] = usage.cache_write
        counts["cache_read_input_tokens"] = usage.cache_read
    return counts


def _input(case: Case, index: int) -> dict[str, Any]:
    joined = "".join(s.fragment for s in case.steps if isinstance(s, Call) and s.index == index)
    value = json.loads(joined)
    if not isinstance(value, dict):
        raise ValueError(f"{case.name}: a tool_use input must be a JSON object, got {joined!r}")
    return value


def _tool_use(step: Call, value: dict[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use"}
    if step.call_id is not None:
        block["id"] = step.call_id
    return {**block, "name": step.name, "input": value}


def _thinking_start(step: Thought) -> dict[str, Any]:
    if step.redacted is not None:
        return {"type": "redacted_thinking", "data": step.redacted}
    return {"type": "thinking", "thinking": ""}


def _thinking_deltas(step: Thought, block: int) -> list[Frame]:
    """A thought's frames: its text (one ``ReasoningDelta`` owed), then its signature."""
    pieces: list[Frame] = []
    if step.redacted is not None:
        return pieces
    if step.text:
        delta = {"type": "thinking_delta", "thinking": step.text}
        pieces.append(Frame(_event("content_block_delta", {"index": block, "delta": delta}), 1))
    if step.signature is not None:
        delta = {"type": "signature_delta", "signature": step.signature}
        pieces.append(Frame(_event("content_block_delta", {"index": block, "delta": delta}), 0))
    return pieces


def thinking_blocks(case: Case) -> tuple[dict[str, Any], ...]:
    """The case's reasoning as the Messages API's content blocks (the message body's, and
    what a later request must send back at the start of the assistant turn)."""
    blocks: list[dict[str, Any]] = []
    for block in thought_blocks(case):
        if block[0].redacted is not None:
            blocks.append({"type": "redacted_thinking", "data": block[0].redacted})
            continue
        thinking: dict[str, Any] = {
            "type": "thinking",
            "thinking": "".join(step.text for step in block),
        }
        signature = next((s.signature for s in block if s.signature is not None), None)
        if signature is not None:
            thinking["signature"] = signature
        blocks.append(thinking)
    return tuple(blocks)


def sent_back_problem(request: Any, case: Case) -> str | None:
    """Why the Messages API would refuse ``request`` (HTTP 400, ``invalid_request_error``)
    when thinking is on and the last assistant turn must carry ``case.sends_back``: its
    thinking blocks first, in order, text and signature intact (docs/conformance.md)."""
    if not case.sends_back:
        return None
    messages = request.get("messages") if isinstance(request, dict) else None
    turns = [
        (number, message)
        for number, message in enumerate(messages if isinstance(messages, list) else [])
        if isinstance(message, dict) and message.get("role") == "assistant"
    ]
    if not turns:
        return "messages: the assistant turn with the tool_use blocks is missing"
    number, turn = turns[-1]
    content = turn.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    for position, want in enumerate(case.sends_back):
        got = blocks[position] if position < len(blocks) else None
        kind = got.get("type") if isinstance(got, dict) else None
        where = f"messages.{number}.content.{position}"
        if kind not in ("thinking", "redacted_thinking"):
            return (
                f"{where}.type: Expected `thinking` or `redacted_thinking`, but found "
                f"`{kind}`. When `thinking` is enabled, a final `assistant` message must start "
                "with a thinking block (preceeding the lastmost set of `tool_use` and "
                "`tool_result` blocks). We recommend you include thinking blocks from previous "
                "turns."
            )
        assert isinstance(got, dict)
        if kind == "redacted_thinking" or want["type"] == "redacted_thinking":
            if got != want:
                return f"{where}: Invalid `data` in `redacted_thinking` block"
            continue
        if got.get("thinking") != want["thinking"] or got.get("signature") != want.get("signature"):
            return f"{where}: Invalid `signature` in `thinking` block"
    return None


def _transcript(case: Case, forced: str | None, model: str) -> Transcript:
    """The case as a streamed Messages API response (``"stream": true``)."""
    usage = _usage(case)
    message: dict[str, Any] = {
        "id": MESSAGE_ID,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
    }
    if usage is not None:
        message["usage"] = {**_input_usage(usage), "output_tokens": 1}
    opening = [_event("message_start", {"message": message}), _event("ping", {})]
    steps: list[Frame] = []
    block = -1
    open_kind: str | int | None = None
    for step, thought in zip(case.steps, block_numbers(case.steps), strict=True):
        if isinstance(step, UsageStep | Generated) or (
            isinstance(step, Text) and not (forced or step.text)
        ):
            continue
        if isinstance(step, Cite):  # a citation on the text block open now
            delta = {"type": "citations_delta", "citation": _location(step)}
            steps.append(Frame(_event("content_block_delta", {"index": block, "delta": delta}), 1))
            continue
        if isinstance(step, ServerTool):
            if open_kind is not None:
                steps.append(Frame(_event("content_block_stop", {"index": block}), 0))
            open_kind = None
            steps += _server_tool_frames(step, block + 1)
            block += 2
            continue
        kind: str | int = (
            "text"
            if isinstance(step, Text)
            else f"thought {thought}"
            if isinstance(step, Thought)
            else step.index
        )
        if kind != open_kind:
            if open_kind is not None:
                steps.append(Frame(_event("content_block_stop", {"index": block}), 0))
            block += 1
            open_kind = kind
            if isinstance(step, Thought):
                opened = _thinking_start(step)
                start = {"index": block, "content_block": opened}
                steps.append(Frame(_event("content_block_start", start), 0))
            elif isinstance(step, Text) and forced:
                answer = {"type": "tool_use", "id": ANSWER_ID, "name": forced, "input": {}}
                start = {"index": block, "content_block": answer}
                steps.append(Frame(_event("content_block_start", start), 0))
            elif isinstance(step, Text):
                start = {"index": block, "content_block": {"type": "text", "text": ""}}
                steps.append(Frame(_event("content_block_start", start), 0))
            else:
                start = {"index": block, "content_block": _tool_use(step, {})}
                steps.append(Frame(_event("content_block_start", start), 1))
                continue
        if isinstance(step, Thought):
            steps += _thinking_deltas(step, block)
            continue
        if isinstance(step, Text) and forced:
            fragment = step.wire if step.wire is not None else step.text
            delta = {"type": "input_json_delta", "partial_json": fragment}
            event = _event("content_block_delta", {"index": block, "delta": delta})
            steps.append(Frame(event, int(bool(step.text))))
            continue
        if isinstance(step, Text):
            delta = {"type": "text_delta", "text": step.text}
        else:
            delta = {"type": "input_json_delta", "partial_json": step.fragment}
        steps.append(Frame(_event("content_block_delta", {"index": block, "delta": delta}), 1))
    if open_kind is not None:
        steps.append(Frame(_event("content_block_stop", {"index": block}), 0))
    delta_event: dict[str, Any] = {
        "delta": {"stop_reason": case.finish_reason, "stop_sequence": None}
    }
    if usage is not None:
        delta_event["usage"] = {"output_tokens": usage.output_tokens}
    closing = [_event("message_delta", delta_event), _event("message_stop", {})]
    return Transcript(steps, opening=opening, closing=closing)


def _message(case: Case, forced: str | None, model: str) -> bytes:
    """The case as one Messages API message (no ``stream``)."""
    content: list[dict[str, Any]] = []
    if forced:
        answer = {"type": "tool_use", "id": ANSWER_ID, "name": forced, "input": _SPLICE}
        content.append(answer)
    thoughts = iter(thinking_blocks(case))
    numbers = block_numbers(case.steps)
    for position, step in enumerate(case.steps):
        if isinstance(step, Thought):
            if position == 0 or numbers[position - 1] != numbers[position]:
                content.append(next(thoughts))
            continue
        if isinstance(step, Text) and forced:
            continue
        if isinstance(step, Text):
            if content and content[-1]["type"] == "text":
                content[-1]["text"] += step.text
            else:
                content.append({"type": "text", "text": step.text})
        elif isinstance(step, Call) and step.name is not None:
            content.append(_tool_use(step, _input(case, step.index)))
        elif isinstance(step, ServerTool):
            content += _server_tool_blocks(step)
        elif isinstance(step, Cite):
            content[-1].setdefault("citations", []).append(_location(step))
    message: dict[str, Any] = {
        "id": MESSAGE_ID,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": case.finish_reason,
        "stop_sequence": None,
    }
    usage = _usage(case)
    if usage is not None:
        message["usage"] = {**_input_usage(usage), "output_tokens": usage.output_tokens}
    encoded = json_bytes(message)
    if forced:
        # The answer's tokens as the model wrote them, only the spacing gone.
        answer_text = "".join(step.text for step in case.steps if isinstance(step, Text))
        encoded = encoded.replace(json_bytes(_SPLICE), answer_text.encode("utf-8"), 1)
    return encoded


def _server_tool_blocks(step: ServerTool) -> list[dict[str, Any]]:
    """A web search as its two blocks: the ``server_tool_use`` and its result."""
    use = {"type": "server_tool_use", "id": step.call_id, "name": step.name, "input": step.input}
    result = {"type": "web_search_tool_result", "tool_use_id": step.call_id, "content": step.output}
    return [use, result]


def _server_tool_frames(step: ServerTool, block: int) -> list[Frame]:
    """Its blocks streamed: the call's input as ``input_json_delta`` (the call owed when its
    block stops, its input whole), then the result block, whole at its start."""
    use, result = _server_tool_blocks(step)
    delta = {"type": "input_json_delta", "partial_json": json.dumps(step.input)}
    return [
        Frame(
            _event("content_block_start", {"index": block, "content_block": {**use, "input": {}}}),
            0,
        ),
        Frame(_event("content_block_delta", {"index": block, "delta": delta}), 0),
        Frame(_event("content_block_stop", {"index": block}), 1),
        Frame(_event("content_block_start", {"index": block + 1, "content_block": result}), 1),
        Frame(_event("content_block_stop", {"index": block + 1}), 0),
    ]


def _location(step: Cite) -> dict[str, Any]:
    """A citation of a web search's result, as the API writes it on a text block."""
    return {
        "type": "web_search_result_location",
        "url": step.url,
        "title": step.title,
        "cited_text": step.cited_text,
        "encrypted_index": "RUNPORT-INDEX-" + hashlib.sha256(step.url.encode()).hexdigest()[:16],
    }


def _cited(case: Case) -> Case:
    """Web searches and citations as the Messages API says them (idempotent): a search's
    results typed and with their encrypted content, its blocks' types kept to go back; a
    citation attached to its text block, so it starts where the block does and has no end,
    quoting the cited span of the answer when the case gives no quote."""
    steps: list[Step] = []
    text, block_start, in_text = "", 0, False
    for step in case.steps:
        if isinstance(step, Text):
            if not in_text:
                block_start, in_text = len(text), True
            text += step.text
        elif isinstance(step, ServerTool):
            in_text = False
            results = [
                item
                if "type" in item
                else {
                    "type": "web_search_result",
                    **item,
                    "title": item.get("title", ""),
                    "encrypted_content": "RUNPORT-ENCRYPTED-"
                    + hashlib.sha256(json.dumps(item, sort_keys=True).encode()).hexdigest()[:24],
                }
                for item in step.output
            ]
            step = replace(
                step,
                output=results,
                call_metadata={"anthropic": {"type": "server_tool_use"}},
                result_metadata={"anthropic": {"type": "web_search_tool_result"}},
            )
        elif isinstance(step, Cite):
            quoted = step.cited_text
            if quoted is None:
                quoted = text[step.start : step.end]
            step = replace(step, start=block_start, end=None, cited_text=quoted)
        elif not isinstance(step, UsageStep):
            in_text = False
        steps.append(step)
    return case if tuple(steps) == case.steps else replace(case, steps=tuple(steps))


def _unspaced(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """A JSON answer: each text step without the whitespace outside strings (what the stream
    and the message body agree on when the answer is a tool's input: the stream keeps the
    model's spacing, the body the server's), the spaced text kept as ``wire``."""
    played: list[Step] = []
    in_string = escaped = False
    for step in steps:
        if not isinstance(step, Text):
            played.append(step)
            continue
        kept: list[str] = []
        for char in step.text:
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char in " \t\n\r":
                continue
            kept.append(char)
        played.append(Text("".join(kept), wire=step.wire or step.text))
    return tuple(played)


class AnthropicMessages(WireProtocol):
    """The Messages API: ``POST {base_url}/v1/messages``; content blocks one after another
    (calls in blocks), its own stop reasons, ``message_stop`` the completion marker; thinking
    blocks kept one part per block, and sent back intact (the API refuses a tool run's next
    turn otherwise); ``max_tokens``, ``refusal`` and ``pause_turn`` ends; cache reads and
    writes beside ``input_tokens`` (in ``message_start`` when streamed); a web search as
    ``server_tool_use`` and ``web_search_tool_result`` blocks, a citation as a
    ``citations_delta`` on its text block (no span: it starts where the block does). A call
    cut mid-arguments is not played: the message body has no form for it; nor a generated
    file: the API makes none."""

    name: ClassVar[str] = "anthropic-messages"
    endpoint: ClassVar[str] = "POST {base_url}/v1/messages"
    error_status: ClassVar[int] = 529
    finish_reasons: ClassVar[Mapping[str, str]] = {
        "stop": "end_turn",
        "tool_calls": "tool_use",
        "length": "max_tokens",
        "content_filter": "refusal",
        "pause": "pause_turn",
    }
    finishes: ClassVar[Mapping[str, str]] = {wire: own for own, wire in finish_reasons.items()}
    features: ClassVar[frozenset[str]] = frozenset(
        {
            "redacted_reasoning",
            "cut_turns",
            "refusals",
            "pause_turns",
            "cache_usage",
            "cache_writes",
            "citations",
            "server_tools",
        }
    )

    def request_problems(self, request: WireRequest, sent: ExecutionRequest) -> list[str]:
        return shape_problems(messages_shape(request.json, sent), sent)

    def recognise(self, request: WireRequest) -> bool | str:
        if request.path.rstrip("/") != "/v1/messages":
            return self.endpoint
        return isinstance(request.json, Mapping) and request.json.get("stream") is True

    def check(self, request: WireRequest, case: Case) -> Refusal | None:
        problem = sent_back_problem(request.json, case)
        if problem is None:
            return None
        error = {"type": "invalid_request_error", "message": problem}
        return Refusal(400, json_bytes({"type": "error", "error": error}), problem)

    def play(self, case: Case) -> Case:
        case = _cited(super().play(calls_in_blocks(case)))
        if json_answer(case):
            steps = _unspaced(case.steps)
            if steps != case.steps:
                case = replace(case, steps=steps)
        return case

    def reasoning_metadata(
        self, number: int, block: Sequence[Thought], signature: str | None
    ) -> dict[str, Any] | None:
        if block[0].redacted is not None:
            return {"anthropic": {"type": "redacted_thinking", "data": block[0].redacted}}
        signed = {} if signature is None else {"signature": signature}
        return {"anthropic": {"type": "thinking", **signed}}

    def sent_back(self, case: Case) -> Any:
        return thinking_blocks(case) or None

    def stream(self, case: Case, context: WireContext) -> Transcript:
        return _transcript(case, _forced_tool(case, _json(context)), context.model)

    def body(self, case: Case, context: WireContext) -> bytes:
        return _message(case, _forced_tool(case, _json(context)), context.model)

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        return b"event: error\ndata: " + _error(context.marker, "overloaded_error") + b"\n\n"

    def garbage_frame(self, context: WireContext) -> bytes:
        marker = context.marker.encode()
        return b'event: content_block_delta\ndata: {"type": ' + marker + b"\n\n"

    def error_body(self, status: int, context: WireContext) -> bytes:
        kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
        return _error(context.marker, kind)


def _json(context: WireContext) -> Any:
    return None if context.request is None else context.request.json
