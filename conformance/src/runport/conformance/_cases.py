"""The case catalogue: every scripted upstream behaviour, written once, protocol-neutral.

A case says what the upstream *does* (text fragments, tool-call fragments, usage, how it ends or
which fault it commits); each ``WireProtocol`` (``_protocols`` holds the built-in ones) plays it
as its wire can say it and writes it as its bytes. Because the suite wrote the script, it knows
every expected event and every receipt field exactly — the expectations here are derived from
the script by the wire rules of docs/wire-types.md, never from an adapter.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from runport.contracts import (
    Citation,
    CitationSource,
    CompiledInteraction,
    Delta,
    ErrorCode,
    ExecutionRequest,
    FileDelta,
    Finish,
    Message,
    ProgressEvent,
    ReasoningDelta,
    ServerToolCall,
    ServerToolResult,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
)

__all__ = [
    "CASES",
    "CASES_BY_NAME",
    "ENDINGS",
    "Call",
    "Case",
    "Cite",
    "Ending",
    "Fault",
    "Generated",
    "Progress",
    "ServerTool",
    "Text",
    "Thought",
    "UsageStep",
    "block_signature",
    "thought_blocks",
]

FINISHES: Final = frozenset(get_args(Finish))
"""runport's words for how a turn ended (``ExecutionReceipt.finish``)."""

Progress = ProgressEvent
"""A progress event (``runport.contracts.ProgressEvent``), the only kind a script foretells one
by one."""


@dataclass(frozen=True)
class Text:
    """One upstream text fragment: one ``Delta`` (none when ``text`` is empty).

    ``wire`` is what the upstream writes when that differs from the text the client must
    deliver: a structured answer a protocol sends as a forced tool's input keeps the model's
    spacing on the wire (the ``anthropic-messages`` protocol).
    """

    text: str
    wire: str | None = None


@dataclass(frozen=True)
class Thought:
    """One upstream reasoning fragment: one ``ReasoningDelta`` (none when ``text`` is empty).

    Consecutive thoughts are one reasoning block; any other step ends it, and so does a
    ``signature`` (the provider's, sent after the block's text: Anthropic's
    ``signature_delta``, Gemini's ``thoughtSignature``, the mock's ``signature``). A
    thought with ``redacted`` data is a redacted block of its own (Anthropic's
    ``redacted_thinking``: no text, no event). How each protocol keeps a block is
    ``WireProtocol.reasoning``'s business (docs/conformance.md).
    """

    text: str
    signature: str | None = None
    redacted: str | None = None


@dataclass(frozen=True)
class Call:
    """One upstream tool-call fragment: one ``ToolCallDelta``.

    A call's first fragment names the tool (``name``) and, when the upstream sends one, its
    id; later fragments carry only ``fragment``. The first may have an empty fragment: it
    announces the call.
    """

    index: int
    fragment: str = ""
    name: str | None = None
    call_id: str | None = None


@dataclass(frozen=True)
class UsageStep:
    """Token counts the upstream reports (after the finish, as chat-completions does).

    ``input_tokens`` counts every input token, cached or not; ``cache_read`` and
    ``cache_write`` are the parts of it read from and written to the prompt cache (ADR 0051),
    each written the way the protocol's wire says it (Anthropic's ``input_tokens`` leaves
    them out). A protocol without ``cache_writes`` plays the case with no writes.
    """

    input_tokens: int
    output_tokens: int
    cache_read: int = 0
    cache_write: int = 0


@dataclass(frozen=True)
class ServerTool:
    """A tool the provider ran itself (adr/0055-what-the-provider-did-itself.md): one
    ``ServerToolCall``, then one ``ServerToolResult`` answering it; never a call the run
    makes (a ``ToolCallDelta``). ``output`` is what the provider says it returned."""

    call_id: str
    name: str
    input: Any
    output: Any
    call_metadata: Mapping[str, Any] | None = None
    """The call's ``provider_metadata`` as the protocol keeps it (set by ``WireProtocol.play``,
    as the wire says the tool): what goes back with it in a later turn."""
    result_metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Cite:
    """A web source the answer cites: one ``Citation`` of the characters ``start`` to ``end``
    of the turn's text (a protocol that cites without a span plays it without one), quoting
    ``cited_text`` of the source when the wire gives it."""

    url: str
    title: str
    start: int | None
    end: int | None
    cited_text: str | None = None


@dataclass(frozen=True)
class Generated:
    """A file the model generated, whole: one ``FileDelta``, kept in the receipt's ``files``;
    ``data`` is base64."""

    media_type: str
    data: str


Provided = ServerTool | Cite | Generated
"""What the provider did itself, as steps."""

Step = Text | Thought | Call | UsageStep | ServerTool | Cite | Generated

Ending = Literal["finish_only", "marker_only"]
"""How a stream whose wire keeps its finish reason and its completion marker apart
(``WireProtocol.features`` ``"separate_marker"``: chat completions' ``finish_reason`` and
``data: [DONE]``) ends with only one of them: ``finish_only``, the finish reason and then a
clean end of the body (servers that send no ``[DONE]``); ``marker_only``, the marker with no
finish reason before it."""

FaultKind = Literal["status", "reset", "stall", "garbage", "error_frame", "eof", "oversize"]


@dataclass(frozen=True)
class Fault:
    """How a failing case fails, after its steps.

    ``kind`` is the wire behaviour an HTTP upstream plays: an HTTP error ``status`` before
    any frame, a connection ``reset``, a ``stall`` (nothing more is sent), a ``garbage``
    frame, an ``error_frame`` (``data: {"error": …}``), a clean ``eof`` without the
    completion marker, or an ``oversize`` body (the steps exceed the request's bound). A
    scripted-runtime upstream plays all of them as a ``fail`` event with ``code``, except
    ``oversize``, which the runtime's own bound must catch.
    """

    kind: FaultKind
    code: ErrorCode
    retry_after_ms: int | None = None
    status: int | None = None


TEXT_SCHEMA: Final[dict[str, Any]] = {"type": "string"}
WEATHER_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temperature_c": {"type": "number"}},
    "required": ["city", "temperature_c"],
    "additionalProperties": False,
}
TOOLS: Final = (
    ToolSpec(
        name="get_weather",
        description="Current weather for a city.",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    ),
    ToolSpec(
        name="get_time",
        description="Current time in a zone.",
        parameters={
            "type": "object",
            "properties": {"zone": {"type": "string"}},
            "required": ["zone"],
        },
    ),
)


HISTORY: Final = (
    Message(
        role="assistant",
        content="",
        tool_calls=[
            ToolCall(call_id="call_h0", name="get_time", arguments={"zone": "UTC"}),
        ],
    ),
    Message(role="tool", tool_call_id="call_h0", content='{"time": "12:00"}'),
    Message(role="user", content="And the weather?"),
)
"""An earlier turn a request carries (``Case.history``): a tool call, its result, and the
user's next word."""


@dataclass(frozen=True)
class Case:
    """One scripted upstream turn and everything the suite expects of it.

    ``finish_reason`` is what a successful turn ends with; a failing one has a ``fault``
    instead. ``role_frame`` is false for an upstream that sends nothing at all (an empty
    body). ``split_utf8`` asks an HTTP upstream to split frames inside UTF-8 sequences
    across network writes. ``needs`` names the capabilities the case exercises.
    """

    name: str
    summary: str
    steps: tuple[Step, ...] = ()
    finish_reason: str | None = "stop"
    fault: Fault | None = None
    finish: str | None = None
    """The receipt's ``finish`` where the wire's word for the end is not runport's own (set
    by ``WireProtocol.play`` from the protocol's ``finishes``)."""
    schema: Mapping[str, Any] = field(default_factory=lambda: TEXT_SCHEMA)
    tools: bool = False
    max_response_bytes: int | None = None
    role_frame: bool = True
    split_utf8: bool = False
    requires: frozenset[str] = frozenset()
    """What the wire must be able to say to play the case (``WireProtocol.features``)."""
    expected_reasoning: tuple[dict[str, Any], ...] | None = None
    """The receipt's ``reasoning`` as the protocol keeps it: set when a protocol plays the
    case (``WireProtocol.played``); ``None`` on an unplayed case (one part per block)."""
    sends_back: Any = None
    """What the request of this turn must carry back of the previous turn's reasoning, when
    the protocol enforces it (``WireProtocol.sent_back``); else the upstream refuses it with
    the API's own error (``WireProtocol.check``)."""
    history: bool = False
    """Whether the request carries an earlier turn of the conversation (the assistant's tool
    call and its result, ``HISTORY``), which the adapter must send back as the protocol says."""
    ending: Ending | None = None
    """Which of the finish reason and the completion marker the stream ends with, the other
    left out (see ``Ending``), on the ``ENDINGS`` cases."""

    @property
    def fails(self) -> bool:
        return self.fault is not None

    @property
    def reasons(self) -> bool:
        """Whether the upstream sends reasoning in this case."""
        return any(isinstance(step, Thought) for step in self.steps)

    @property
    def needs(self) -> frozenset[str]:
        needs: set[str] = set()
        if any(isinstance(step, Call) for step in self.steps) or self.tools:
            needs.add("tool_calls")
        if self.schema.get("type") != "string":
            needs.add("structured_output")
        return frozenset(needs)

    @property
    def prefix_only(self) -> bool:
        """For the oversize case, where an adapter's byte count trips is its own business,
        so the progress it delivers need only be a prefix of the script's."""
        return self.fault is not None and self.fault.kind == "oversize"

    def progress(self) -> tuple[Progress, ...]:
        """The progress events the script foretells, in upstream order (docs/wire-types.md rules:
        ``call_id`` is the upstream id or ``call_<index>``; ``name`` and ``call_id`` are
        repeated on every fragment)."""
        events: list[Progress] = []
        identity: dict[int, tuple[str, str]] = {}
        for step in self.steps:
            if isinstance(step, Text):
                if step.text:
                    events.append(Delta(text=step.text))
            elif isinstance(step, Thought):
                if step.text:
                    events.append(ReasoningDelta(text=step.text))
            elif isinstance(step, ServerTool):
                call, result = _metadata(step.call_metadata), _metadata(step.result_metadata)
                events.append(
                    ServerToolCall(
                        call_id=step.call_id, name=step.name, input=step.input,
                        provider_metadata=call,
                    )
                )  # fmt: skip
                events.append(
                    ServerToolResult(
                        call_id=step.call_id, name=step.name, output=step.output,
                        provider_metadata=result,
                    )
                )  # fmt: skip
            elif isinstance(step, Cite):
                source = CitationSource(type="url", url=step.url, title=step.title)
                events.append(
                    Citation(
                        source=source, cited_text=step.cited_text, start=step.start, end=step.end
                    )
                )
            elif isinstance(step, Generated):
                events.append(FileDelta(media_type=step.media_type, data=step.data))
            elif isinstance(step, Call):
                if step.index not in identity:
                    assert step.name is not None, f"{self.name}: a call's first step names it"
                    identity[step.index] = (step.call_id or f"call_{step.index}", step.name)
                call_id, name = identity[step.index]
                events.append(
                    ToolCallDelta(
                        index=step.index,
                        call_id=call_id,
                        name=name,
                        arguments_fragment=step.fragment,
                    )
                )
        return tuple(events)

    def request(self) -> ExecutionRequest:
        """The request every adapter gets for this case (the upstream ignores it)."""
        policy: dict[str, Any] = {"temperature": 0}
        if self.max_response_bytes is not None:
            policy["max_response_bytes"] = self.max_response_bytes
        interaction = CompiledInteraction(
            compiler="runport.conformance/1",
            contract_id=f"conformance.{self.name}",
            contract_version="1.0.0",
            messages=[
                Message(role="system", content="You are tested by runport-conformance."),
                Message(role="user", content=f"Play the scripted case {self.name!r}."),
                *(HISTORY if self.history else ()),
            ],
            output_schema=dict(self.schema),
            required_capabilities=sorted({"text", *self.needs}),
            runtime_policy=policy,
            tools=list(TOOLS) if self.needs & {"tool_calls"} else None,
        )
        return ExecutionRequest(interaction=interaction)

    def expected_receipt(self) -> dict[str, Any]:
        """The receipt fields (all but ``adapter``) a successful turn must produce, derived
        here by the docs/wire-types.md rules with the suite's own JSON and hashing."""
        assert self.fault is None, f"{self.name} fails: it has no receipt"
        texts = [step.text for step in self.steps if isinstance(step, Text)]
        text = "".join(texts) or None
        calls: dict[int, tuple[str, str, list[str]]] = {}
        for event in self.progress():
            if isinstance(event, ToolCallDelta):
                entry = calls.setdefault(event.index, (event.call_id, event.name, []))
                entry[2].append(event.arguments_fragment)
        tool_calls = [
            {"call_id": call_id, "name": name, "arguments": _parse("".join(parts))[1]}
            for _, (call_id, name, parts) in sorted(calls.items())
        ]
        parsed_ok = True
        output: Any = None
        if text is not None:
            if self.schema.get("type") == "string":
                output = text
            else:
                parsed_ok, output = _parse(text)
        valid: bool | None = None
        if not tool_calls:
            valid = parsed_ok and schema_accepts(self.schema, output)
        usage: dict[str, int] | None = None
        for step in self.steps:
            if isinstance(step, UsageStep):
                usage = usage or {"input_tokens": 0, "output_tokens": 0}
                usage["input_tokens"] += step.input_tokens
                usage["output_tokens"] += step.output_tokens
                for key, count in (
                    ("cache_read_tokens", step.cache_read),
                    ("cache_write_tokens", step.cache_write),
                ):
                    if count:
                        usage[key] = usage.get(key, 0) + count
        receipt: dict[str, Any] = {
            "request_fingerprint": independent_request_fingerprint(
                self.request().interaction.model_dump(mode="json")
            ),
            "output_fingerprint": independent_fingerprint(output),
            "output": output,
            "output_schema_valid": valid,
        }
        if text is not None:
            receipt["text"] = text
        if tool_calls:
            receipt["tool_calls"] = tool_calls
        if self.finish_reason is not None:
            receipt["finish_reason"] = self.finish_reason
        if self.finish is not None and self.finish != self.finish_reason:
            receipt["finish"] = self.finish
        if usage is not None:
            receipt["usage"] = usage
        receipt.update(self._expected_provided())
        reasoning = (
            list(self.expected_reasoning)
            if self.expected_reasoning is not None
            else [{"text": "".join(s.text for s in block)} for block in thought_blocks(self)]
        )
        if reasoning:
            receipt["reasoning"] = reasoning
        return receipt

    def _expected_provided(self) -> dict[str, Any]:
        """The receipt's ``server_tools``, ``citations`` and ``files``, each left out when
        empty, written as docs/wire-types.md says (a generated file is a ``file`` part)."""
        tools: list[dict[str, Any]] = []
        citations: list[dict[str, Any]] = []
        files: list[dict[str, Any]] = []
        for step in self.steps:
            if isinstance(step, ServerTool):
                tools.append({"kind": "ServerToolCall", "call_id": step.call_id,
                              "name": step.name, "input": step.input})  # fmt: skip
                tools.append({"kind": "ServerToolResult", "call_id": step.call_id,
                              "name": step.name, "output": step.output})  # fmt: skip
            elif isinstance(step, Cite):
                source = {"type": "url", "url": step.url, "title": step.title}
                citation = {"kind": "Citation", "source": source, "cited_text": step.cited_text,
                            "start": step.start, "end": step.end}  # fmt: skip
                citations.append({k: v for k, v in citation.items() if v is not None})
            elif isinstance(step, Generated):
                files.append({"kind": "file", "media_type": step.media_type, "data": step.data})
        kept = {"server_tools": tools, "citations": citations, "files": files}
        return {key: value for key, value in kept.items() if value}

    def provided(self) -> tuple[Provided, ...]:
        """What the provider did itself in this case, in order."""
        return tuple(step for step in self.steps if isinstance(step, ServerTool | Cite | Generated))

    @property
    def expected_finish(self) -> str | None:
        """The receipt's ``finish``: the protocol's word for the end (``finish``), else the
        finish reason when it is runport's own word; ``None`` when the suite cannot tell (a
        protocol's own word it gave no ``finishes`` entry for)."""
        if self.finish is not None:
            return self.finish
        return self.finish_reason if self.finish_reason in FINISHES else None

    def cache_counts(self) -> tuple[int, int]:
        """The cache reads and writes the upstream reports, summed over its usage steps."""
        usage = [step for step in self.steps if isinstance(step, UsageStep)]
        return sum(s.cache_read for s in usage), sum(s.cache_write for s in usage)

    def answer(self) -> str | None:
        """The answer text the script sends (never any of its reasoning)."""
        return "".join(step.text for step in self.steps if isinstance(step, Text)) or None


def _metadata(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else dict(value)


def block_numbers(steps: Sequence[Step]) -> list[int | None]:
    """Per step, the reasoning block it belongs to (``None`` for a step that is no thought):
    blocks are runs of thoughts, each ended by any other step or a signature; a redacted
    thought is a block of its own."""
    numbers: list[int | None] = []
    count = 0
    open_ = False
    for step in steps:
        if not isinstance(step, Thought):
            open_ = False
            numbers.append(None)
            continue
        if step.redacted is not None or not open_:
            count += 1
        numbers.append(count - 1)
        open_ = step.redacted is None and step.signature is None
    return numbers


def _blocks(steps: Sequence[Step]) -> list[list[Thought]]:
    blocks: list[list[Thought]] = []
    for step, number in zip(steps, block_numbers(steps), strict=True):
        if isinstance(step, Thought) and number is not None:
            if number == len(blocks):
                blocks.append([])
            blocks[number].append(step)
    return blocks


def thought_blocks(case: Case) -> list[list[Thought]]:
    """The case's reasoning blocks, in order (see ``block_numbers``)."""
    return _blocks(case.steps)


def block_signature(block: Sequence[Thought]) -> str | None:
    """A reasoning block's signature, if it carried one."""
    return next((step.signature for step in block if step.signature is not None), None)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse(text: str) -> tuple[bool, Any]:
    """Strict JSON (no NaN or infinities), else the text itself — docs/wire-types.md's rule."""
    try:
        return True, json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        return False, text


def independent_fingerprint(value: Any) -> str:
    """SHA-256 of canonical JSON, computed without ``runport.contracts`` so a receipt's
    fingerprints are checked against a second implementation of docs/wire-types.md, not against
    themselves."""
    encoded = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()


def independent_request_fingerprint(interaction: Mapping[str, Any]) -> str:
    """The request fingerprint of an interaction's JSON dump, recomputed by the suite: an
    image or file part that carries its bytes (``data``, base64) counts as the SHA-256 of
    those bytes (``sha256``), as docs/wire-types.md says, so a receipt never holds an image."""
    return independent_fingerprint(
        {
            **interaction,
            "messages": [
                _with_part_digests(message) for message in interaction.get("messages", [])
            ],
        }
    )


def _with_part_digests(message: Mapping[str, Any]) -> Mapping[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    parts = []
    for part in content:
        if isinstance(part, dict) and part.get("kind") in ("image", "file") and "data" in part:
            digest = hashlib.sha256(base64.b64decode(part["data"], validate=True)).hexdigest()
            part = {**{k: v for k, v in part.items() if k != "data"}, "sha256": digest}
        parts.append(part)
    return {**message, "content": parts}


def schema_accepts(schema: Mapping[str, Any], value: Any) -> bool:
    """Whether ``value`` satisfies ``schema`` (Draft 2020-12, as every adapter computes it)."""
    from runport.core import validate_output

    return not validate_output(schema, value)


# --------------------------------------------------------------------------------------------
# The catalogue
# --------------------------------------------------------------------------------------------

_MARKERS = "abcdefghijklmnopqrstuvwxyz"


def _tiny_deltas(count: int) -> tuple[Text, ...]:
    return tuple(Text(_MARKERS[i % 26] * (1 + i % 2)) for i in range(count))


def _oversize_steps() -> tuple[Text, ...]:
    return tuple(Text(f"{i:03d}:" + "x" * 60) for i in range(64))


def _signed(number: int) -> str:
    """An opaque signature, as providers send them (law 10: it never reaches a log)."""
    return f"RUNPORT-SIGNATURE-{number}-" + hashlib.sha256(str(number).encode()).hexdigest()[:24]


_INCOMPLETE: Final = frozenset({"incomplete_turns"})
"""Cases a wire says only if it ends a turn as incomplete with its reason (the Responses
API's ``response.incomplete``)."""
_CODED_ERRORS: Final = frozenset({"coded_error_frames"})
"""Cases a wire says only if its error frame carries any error code (the Responses API's
``response.failed``; the others have one kind of error frame, a server error)."""

_CUT: Final = frozenset({"cut_turns"})
"""Cases a wire says only if it can end a turn at the output-token limit with the turn's
output so far (a ``length`` finish: ``length``, ``max_tokens``, ``MAX_TOKENS``,
``response.incomplete``)."""
_CUT_CALLS: Final = frozenset({"cut_turns", "cut_calls"})
"""... and can send a call whose arguments were cut (a wire that sends calls whole cannot)."""
_REFUSALS: Final = frozenset({"refusals"})
"""Cases a wire says only if it ends a turn as refused or content-filtered."""
_PAUSES: Final = frozenset({"pause_turns"})
"""Cases a wire says only if it pauses a turn for the client to continue (Anthropic's
``pause_turn``)."""
_CACHE: Final = frozenset({"cache_usage"})
"""Cases a wire says only if its usage counts prompt-cache reads (``cache_writes``: and
writes)."""

_CITATIONS: Final = frozenset({"citations"})
"""Cases a wire says only if it can cite a source in the answer; what else of what the
provider did itself the case holds (``server_tools``, ``files``) a wire without it plays
without (``WireProtocol.play``)."""
_PNG: Final = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(8)).decode("ascii")

REDACTED_DATA: Final = "RUNPORT-REDACTED-" + hashlib.sha256(b"redacted").hexdigest()[:32]


CASES: Final[tuple[Case, ...]] = (
    Case(
        "plain_text",
        "three text fragments, usage, finish_reason stop",
        (Text("Hel"), Text("lo, "), Text("world."), UsageStep(12, 3)),
    ),
    Case(
        "structured_json",
        "a JSON answer split mid-token, valid against the schema",
        (
            Text('{"city": "Pa'),
            Text('ris", "tempera'),
            Text('ture_c": 21.5'),
            Text("\n"),
            Text("}"),
            UsageStep(20, 9),
        ),
        schema=WEATHER_SCHEMA,
    ),
    Case(
        "structured_not_json",
        "prose where JSON was asked: kept as a string, output_schema_valid false",
        (Text("It is 21 degrees"), Text(" in Paris.")),
        schema=WEATHER_SCHEMA,
    ),
    Case(
        "one_tool_call",
        "after an earlier tool call and its result, a sentence, then one tool call "
        "announced with an empty fragment",
        (
            Text("Checking."),
            Call(0, name="get_weather", call_id="call_w1"),
            Call(0, '{"city":'),
            Call(0, ' "Paris"}'),
        ),
        finish_reason="tool_calls",
        tools=True,
        history=True,
    ),
    Case(
        "three_tool_calls",
        "three calls interleaved, first seen in index order 2, 0, 1; call 1 has no id",
        (
            Call(2, name="get_time", call_id="call_t2"),
            Call(0, name="get_weather", call_id="call_w0"),
            Call(2, '{"zone":'),
            Call(1, '{"city": "Oslo"}', name="get_weather"),
            Call(0, '{"city": "Par'),
            Call(2, ' "UTC"}'),
            Call(0, 'is"}'),
        ),
        finish_reason="tool_calls",
        tools=True,
    ),
    Case("empty_output", "finish_reason stop and nothing said"),
    Case(
        "failure_before_delta",
        "HTTP 503 before any frame",
        fault=Fault("status", ErrorCode.RUNTIME_UNAVAILABLE, status=503),
    ),
    Case(
        "failure_after_deltas",
        "two fragments, then the connection is reset",
        (Text("Par"), Text("tial")),
        fault=Fault("reset", ErrorCode.RUNTIME_UNAVAILABLE),
    ),
    Case(
        "stall_after_deltas",
        "two fragments, then silence past the read timeout",
        (Text("Slow"), Text(" start")),
        fault=Fault("stall", ErrorCode.RUNTIME_TIMEOUT),
    ),
    Case(
        "garbage_frame",
        "a fragment, then a frame that is not JSON",
        (Text("Fine so far"),),
        fault=Fault("garbage", ErrorCode.RUNTIME_INVALID_RESPONSE),
    ),
    Case(
        "error_frame",
        'two fragments, then data: {"error": …} (server error)',
        (Text("Half"), Text(" an answer")),
        fault=Fault("error_frame", ErrorCode.RUNTIME_UNAVAILABLE),
    ),
    Case(
        "truncated",
        "two fragments, then a clean end of stream without finish_reason or [DONE]",
        (Text("The answer is"), Text(" forty")),
        fault=Fault("eof", ErrorCode.RUNTIME_STREAM_TRUNCATED),
    ),
    Case(
        "truncated_empty",
        "HTTP 200 with an empty body",
        fault=Fault("eof", ErrorCode.RUNTIME_STREAM_TRUNCATED),
        role_frame=False,
    ),
    Case(
        "rate_limited",
        "HTTP 429 with Retry-After: 2 (retry_after_ms 2000)",
        fault=Fault("status", ErrorCode.RUNTIME_RATE_LIMITED, retry_after_ms=2000, status=429),
    ),
    Case(
        "oversize",
        "64 fragments of 64 bytes against max_response_bytes 1024",
        _oversize_steps(),
        fault=Fault("oversize", ErrorCode.RUNTIME_RESPONSE_TOO_LARGE),
        max_response_bytes=1024,
    ),
    Case(
        "unicode_split",
        "umlauts, a ZWJ emoji and a combining mark split across fragments and reads",
        (
            Text("Grüße "),
            Text("aus Kö"),
            Text("ln 👩"),
            Text("\u200d💻 "),
            Text("nai"),
            Text("\u0308ve 日本語"),
        ),
        split_utf8=True,
    ),
    Case("many_tiny_deltas", "5,000 one- and two-letter fragments", _tiny_deltas(5000)),
    Case(
        "reasoning_then_text",
        "two reasoning fragments (signed), then the answer",
        (
            Thought("The user wants "),
            Thought("a greeting.", signature=_signed(1)),
            Text("Hel"),
            Text("lo."),
            UsageStep(12, 30),
        ),
    ),
    Case(
        "reasoning_then_tool_call",
        "reasoning (signed), then a tool call",
        (
            Thought("I need the "),
            Thought("weather in Oslo.", signature=_signed(2)),
            Call(0, name="get_weather", call_id="call_r1"),
            Call(0, '{"city": "Oslo"}'),
        ),
        finish_reason="tool_calls",
        tools=True,
    ),
    Case(
        "several_reasoning_blocks",
        "a block, the answer begins, a block after it, a call, a block between the calls",
        (
            Thought("Two lookups.", signature=_signed(3)),
            Text("Checking."),
            Thought("Weather "),
            Thought("first.", signature=_signed(4)),
            Call(0, name="get_weather", call_id="call_b0"),
            Call(0, '{"city": "Paris"}'),
            Thought("Now the time.", signature=_signed(5)),
            Call(1, name="get_time", call_id="call_b1"),
            Call(1, '{"zone": "CET"}'),
        ),
        finish_reason="tool_calls",
        tools=True,
    ),
    Case(
        "redacted_reasoning",
        "a thinking block, a redacted_thinking block, a signature without text, the answer",
        (
            Thought("Considering.", signature=_signed(6)),
            Thought("", redacted=REDACTED_DATA),
            Thought("", signature=_signed(7)),
            Text("Done."),
        ),
        requires=frozenset({"redacted_reasoning"}),
    ),
    Case(
        "oversize_reasoning",
        "64 reasoning fragments of 64 bytes against max_response_bytes 1024, then an answer",
        (*(Thought(step.text) for step in _oversize_steps()), Text("late")),
        fault=Fault("oversize", ErrorCode.RUNTIME_RESPONSE_TOO_LARGE),
        max_response_bytes=1024,
    ),
    Case(
        "truncated_after_reasoning",
        "two reasoning fragments, then a clean end of stream before the completion marker",
        (Thought("Half a "), Thought("thought")),
        fault=Fault("eof", ErrorCode.RUNTIME_STREAM_TRUNCATED),
    ),
    Case(
        "incomplete_length",
        "two fragments, then the turn ends incomplete: the output-token limit (finish length)",
        (Text("Cut "), Text("short"), UsageStep(10, 2)),
        finish_reason="length",
        requires=_INCOMPLETE,
    ),
    Case(
        "incomplete_content_filter",
        "a fragment, then the turn ends incomplete: content filtered (finish content_filter)",
        (Text("Well,"),),
        finish_reason="content_filter",
        requires=_INCOMPLETE,
    ),
    Case(
        "cut_mid_answer",
        "a structured answer cut by the output-token limit mid-string (finish length)",
        (Text('{"city": "Pa'), Text('ris", "tempera'), UsageStep(20, 16)),
        finish_reason="length",
        schema=WEATHER_SCHEMA,
        requires=_CUT,
    ),
    Case(
        "cut_mid_tool_call",
        "a sentence, then a call cut by the output-token limit mid-arguments (finish length)",
        (
            Text("Checking."),
            Call(0, name="get_weather", call_id="call_c1"),
            Call(0, '{"city": "Pa'),
            UsageStep(30, 12),
        ),
        finish_reason="length",
        tools=True,
        requires=_CUT_CALLS,
    ),
    Case(
        "cut_reasoning_only",
        "reasoning only, cut by the output-token limit before any answer (finish length)",
        (Thought("The user wants "), Thought("a long"), UsageStep(12, 64)),
        finish_reason="length",
        requires=_CUT,
    ),
    Case(
        "refused",
        "a sentence, then the turn ends refused (finish content_filter)",
        (Text("I can't help"), Text(" with that."), UsageStep(15, 7)),
        finish_reason="content_filter",
        requires=_REFUSALS,
    ),
    Case(
        "paused",
        "a sentence, then the turn is paused for the client to continue (finish pause)",
        (Text("Searching"), Text(" the web."), UsageStep(40, 6)),
        finish_reason="pause",
        requires=_PAUSES,
    ),
    Case(
        "searched_cited_drawn",
        "a web search the provider ran itself, an answer citing a source, a generated image",
        (
            ServerTool(
                "srv_1", "web_search", {"query": "rivers"}, [{"url": "https://example.org/rivers"}]
            ),
            Text("Rivers run "),
            Text("downhill."),
            Cite("https://example.org/rivers", "Rivers", 0, 6),
            Generated("image/png", _PNG),
            UsageStep(20, 5),
        ),
        requires=_CITATIONS,
    ),
    Case(
        "cache_usage",
        "an answer whose usage counts prompt-cache reads and writes",
        (Text("Cached."), UsageStep(1200, 3, cache_read=1024, cache_write=128)),
        requires=_CACHE,
    ),
    Case(
        "failed_rate_limited",
        "two fragments, then the response fails with a rate-limit error",
        (Text("Half"), Text(" way")),
        fault=Fault("error_frame", ErrorCode.RUNTIME_RATE_LIMITED),
        requires=_CODED_ERRORS,
    ),
    Case(
        "failed_invalid_prompt",
        "the response fails before any output with an invalid-prompt error",
        fault=Fault("error_frame", ErrorCode.RUNTIME_PERMANENT),
        requires=_CODED_ERRORS,
    ),
)

CASES_BY_NAME: Final[Mapping[str, Case]] = {case.name: case for case in CASES}

_SEPARATE_MARKER: Final = frozenset({"separate_marker"})

ENDINGS: Final[tuple[Case, ...]] = (
    Case(
        "finish_without_marker",
        "two fragments, finish_reason stop and usage, then a clean end with no [DONE]: a "
        "whole answer (llama.cpp, TGI and others sent no [DONE])",
        (Text("All "), Text("said."), UsageStep(9, 2)),
        requires=_SEPARATE_MARKER,
        ending="finish_only",
    ),
    Case(
        "marker_without_finish",
        "two fragments, then [DONE] with no finish_reason: whole, its finish unknown (a "
        "client that never sees [DONE], an SDK that swallows it, may call it truncated)",
        (Text("No reason "), Text("given.")),
        finish_reason=None,
        requires=_SEPARATE_MARKER,
        ending="marker_only",
    ),
)
"""Streams that end with only one of the finish reason and the completion marker, judged by
``test_law_9_truncation`` alone (so the other standard tests do not multiply them)."""

SUCCESS_CASES: Final = tuple(case for case in CASES if not case.fails)
FAILURE_CASES: Final = tuple(case for case in CASES if case.fails)
RESUME_CASE: Final = CASES_BY_NAME["plain_text"]
"""What an adapter plays after a caller stop or a failure, to show it is still usable."""


def thread_cases(count: int) -> tuple[Case, ...]:
    """Distinct one-text turns for the thread smoke, so cross-talk between threads shows."""
    return tuple(
        Case(f"thread_{i}", f"thread turn {i}", (Text(f"thread {i} "), Text(f"says {i}")))
        for i in range(count)
    )


def follow_up_case(first: Case, sends_back: Any) -> Case:
    """The second turn of a tool run after ``first``: the request must carry ``first``'s
    reasoning back (``sends_back``), and the model answers."""
    return Case(
        f"{first.name}_follow_up",
        "the turn after the tool result, which must carry the reasoning back",
        (Text("It is 21 °C"), Text(" in Oslo.")),
        sends_back=sends_back,
    )


def sentinel_case() -> Case:
    """The turn after the one under test (law 7): an adapter that retried consumed it."""
    return Case("sentinel", "the next scripted turn", (Text("sentinel"),))


def cases_named(names: Sequence[str]) -> tuple[Case, ...]:
    return tuple(CASES_BY_NAME[name] for name in names)
