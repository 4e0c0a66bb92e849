"""``gemini``: a played case as the Gemini API sends it — one ``GenerateContentResponse`` chunk
per part in an SSE stream (``alt=sse``, CRLF-delimited as Google's servers send it), the
completion marker a candidate's ``finishReason``; or one response object."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Final

from runport.conformance._cases import (
    Call,
    Case,
    Cite,
    Generated,
    Text,
    Thought,
    UsageStep,
    block_numbers,
)
from runport.conformance._protocols._request_shape import gemini_shape, shape_problems
from runport.conformance._rewrites import calls_whole
from runport.conformance._wire_protocol import (
    Frame,
    Transcript,
    WireContext,
    WireProtocol,
    WireRequest,
    json_bytes,
)
from runport.contracts import ExecutionRequest

__all__ = ["Gemini"]

RESPONSE_ID: Final = "runport-conformance-response"
_STATUS: Final = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def _sse(value: Any) -> bytes:
    return b"data: " + json_bytes(value) + b"\r\n\r\n"


def _error(marker: str, code: int) -> bytes:
    status = _STATUS.get(code, "UNKNOWN")
    return json_bytes(
        {"error": {"code": code, "message": f"{marker} scripted {status}", "status": status}}
    )


def _response(model: str, parts: list[dict[str, Any]], **candidate: Any) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"parts": parts, "role": "model"}, **candidate, "index": 0}],
        "modelVersion": model,
        "responseId": RESPONSE_ID,
    }


def _call(step: Call, arguments: str) -> dict[str, Any]:
    call: dict[str, Any] = {"name": step.name, "args": json.loads(arguments)}
    if step.call_id is not None:
        call["id"] = step.call_id
    return {"functionCall": call}


def _grounding(cites: Sequence[Cite]) -> dict[str, Any]:
    """Citations as ``groundingMetadata``: a web chunk per source, a support per span (UTF-8
    byte offsets into the text, which the suite's cases keep ASCII)."""
    return {
        "groundingChunks": [{"web": {"uri": c.url, "title": c.title}} for c in cites],
        "groundingSupports": [
            {"segment": {"startIndex": c.start, "endIndex": c.end}, "groundingChunkIndices": [n]}
            for n, c in enumerate(cites)
        ],
    }


def _parts(case: Case) -> list[tuple[dict[str, Any], int]]:
    """Each part and the progress events it carries (a call: its announcement and its one
    fragment, which in a played case follows the announcement; a thought: its text, the
    part marked ``thought``, its signature as ``thoughtSignature``; a generated image:
    ``inlineData``). A citation is no part: ``_chunks`` sends it as grounding."""
    parts: list[tuple[dict[str, Any], int]] = []
    steps = case.steps
    for position, step in enumerate(steps):
        if isinstance(step, Generated):
            parts.append(({"inlineData": {"mimeType": step.media_type, "data": step.data}}, 1))
        elif isinstance(step, Text):
            parts.append(({"text": step.text}, 1))
        elif isinstance(step, Thought):
            thought: dict[str, Any] = {"text": step.text, "thought": True}
            if step.signature is not None:
                thought["thoughtSignature"] = step.signature
            parts.append((thought, int(bool(step.text))))
        elif isinstance(step, Call) and step.name is not None:
            whole = steps[position + 1]
            assert isinstance(whole, Call)
            parts.append((_call(step, whole.fragment), 2))
    return parts


def _usage(case: Case) -> dict[str, Any]:
    usage = next((step for step in case.steps if isinstance(step, UsageStep)), None)
    if usage is None:
        return {}
    metadata: dict[str, Any] = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    }
    if usage.cache_read:
        metadata["cachedContentTokenCount"] = usage.cache_read
    return {"usageMetadata": metadata}


_PATH: Final = re.compile(r"/v1beta/models/([^/:]+):(streamGenerateContent|generateContent)")


class Gemini(WireProtocol):
    """The Gemini API: ``POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse``
    (``:generateContent`` unstreamed); each call whole, ``finishReason`` the completion
    marker, thought parts kept one part per run, ``{"gemini": {"thoughtSignature": …}}``;
    cache reads as ``cachedContentTokenCount`` (no writes: a cache is a separate resource);
    citations as ``groundingMetadata``, a generated image an ``inlineData`` part; no web
    search a client sees (its grounding is all the API says of it)."""

    name: ClassVar[str] = "gemini"
    endpoint: ClassVar[str] = "POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse"
    finish_reasons: ClassVar[Mapping[str, str]] = {
        "stop": "STOP",
        "tool_calls": "STOP",
        "length": "MAX_TOKENS",
        "content_filter": "SAFETY",
    }
    finishes: ClassVar[Mapping[str, str]] = {
        "STOP": "stop",
        "MAX_TOKENS": "length",
        "SAFETY": "content_filter",
    }
    features: ClassVar[frozenset[str]] = frozenset(
        {"cut_turns", "refusals", "cache_usage", "citations", "files"}
    )

    def request_problems(self, request: WireRequest, sent: ExecutionRequest) -> list[str]:
        return shape_problems(gemini_shape(request.json), sent)

    def recognise(self, request: WireRequest) -> bool | str:
        found = _PATH.fullmatch(request.path)
        if found is None:
            return self.endpoint
        if found[2] == "generateContent":
            return False
        if list(request.query.get("alt", ())) != ["sse"]:
            return "a streamed request needs ?alt=sse (without it the API sends a JSON array)"
        return True

    def play(self, case: Case) -> Case:
        """Calls whole; a ``STOP`` turn that made calls finishes ``tool_calls``, as every
        other protocol's does (the wire has no word of its own for it)."""
        case = super().play(calls_whole(case))
        calls = any(isinstance(step, Call) for step in case.steps)
        if case.finish_reason == "STOP" and calls and case.finish != "tool_calls":
            case = replace(case, finish="tool_calls")
        return case

    def reasoning_metadata(
        self, number: int, block: Sequence[Thought], signature: str | None
    ) -> dict[str, Any] | None:
        return None if signature is None else {"gemini": {"thoughtSignature": signature}}

    def frame(self, payload: bytes) -> bytes:
        return b"data: " + payload + b"\r\n\r\n"

    def stream(self, case: Case, context: WireContext) -> Transcript:
        model = context.model
        parts = iter(_parts(case))
        steps: list[Frame] = []
        for step in case.steps:
            if isinstance(step, Cite):  # a chunk of its own, after the text it grounds
                grounded = _response(model, [], groundingMetadata=_grounding([step]))
                steps.append(Frame(_sse(grounded), 1))
            elif _has_part(step):
                part, carried = next(parts)
                steps.append(Frame(_sse(_response(model, [part])), carried))
        last = {**_response(model, [{"text": ""}], finishReason=case.finish_reason), **_usage(case)}
        return Transcript(steps, closing=[_sse(last)])

    def body(self, case: Case, context: WireContext) -> bytes:
        return json_bytes(_generated(case, context.model))

    def error_frame(self, case: Case, context: WireContext) -> bytes:
        return _sse(json.loads(_error(context.marker, 500)))

    def garbage_frame(self, context: WireContext) -> bytes:
        return b'data: {"candidates": [{"content": ' + context.marker.encode() + b"\r\n\r\n"

    def error_body(self, status: int, context: WireContext) -> bytes:
        return _error(context.marker, status)


def _generated(case: Case, model: str) -> dict[str, Any]:
    """The case as ``:generateContent`` answers it: one response, texts joined per run."""
    parts: list[dict[str, Any]] = []
    runs: list[object] = []
    numbers = iter(
        n for n, s in zip(block_numbers(case.steps), case.steps, strict=True) if _has_part(s)
    )
    for part, _ in _parts(case):
        block = next(numbers, None)
        run: object = "text" if "text" in part and not part.get("thought") else block
        if "text" in part and parts and runs[-1] == run and run is not None:
            parts[-1] = {**parts[-1], **part, "text": parts[-1]["text"] + part["text"]}
        else:
            parts.append(part)
            runs.append(run)
    cites = [step for step in case.steps if isinstance(step, Cite)]
    grounded = {"groundingMetadata": _grounding(cites)} if cites else {}
    answer = _response(model, parts, finishReason=case.finish_reason, **grounded)
    return {**answer, **_usage(case)}


def _has_part(step: object) -> bool:
    """Whether a played step is a part of its own (a call's continuation is in its first)."""
    if isinstance(step, Call):
        return step.name is not None
    return isinstance(step, Text | Thought | Generated)
