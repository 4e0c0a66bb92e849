"""``WireProtocol``: how an author tells the suite what their protocol's bytes are.

The suite writes every case once (``_cases``); a protocol says how one of those cases goes on
its wire — which frames a streamed answer is made of and how many progress events each frame
carries, where the completion marker begins (the cut point a truncation stops at), the body of
an unstreamed answer, its error frame and error bodies, its framing and content type — and how
a request to it is recognised and checked. The loopback upstream (``_upstream``) commits every
fault with those pieces (``_responses``), so a protocol the suite has never heard of gets the
whole law, faults included, with exact expectations. Every built-in protocol is one of these
(``_protocols``).
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from runport.conformance._cases import (
    Case,
    Generated,
    ServerTool,
    Thought,
    UsageStep,
    block_signature,
    thought_blocks,
)
from runport.contracts import ExecutionRequest

__all__ = [
    "Frame",
    "Refusal",
    "Transcript",
    "WireContext",
    "WireProtocol",
    "WireRequest",
    "json_bytes",
]


def json_bytes(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON (non-ASCII kept), as most servers write it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True)
class WireRequest:
    """One request the loopback upstream received, as a protocol sees it."""

    method: str
    path: str
    """The request path without its query (``/api/chat``)."""
    query: Mapping[str, Sequence[str]]
    headers: Mapping[str, str]
    """Header names lower-cased."""
    body: bytes
    json: Any
    """The body parsed as JSON, or ``None`` when it is not JSON."""


@dataclass(frozen=True)
class WireContext:
    """What a rendering may need besides the case: the model the upstream names, the marker
    (put it in error messages, as a provider's error text would be: a caller may see the
    provider's message; the suite plants what it may not see beside it, see
    docs/upstream-safety.md), and the request being answered."""

    model: str
    marker: str
    request: WireRequest | None = None


@dataclass(frozen=True)
class Frame:
    """Bytes the upstream writes in one go, and the progress events they carry: the number
    of ``Delta`` / ``ReasoningDelta`` / ``ToolCallDelta`` events a client owes once it has
    read this frame (law 4 withholds the next frame until the sink has seen them)."""

    data: bytes
    carries: int = 0


@dataclass(frozen=True)
class Transcript:
    """A streamed answer as the protocol writes it, before any fault.

    ``opening`` comes before the case's first step (a role frame, ``message_start``);
    ``steps`` carry the case's progress, in order; ``closing`` is the completion marker and
    whatever follows it — what a truncated stream never sends, and what a stream that failed
    mid-way replaces with the error frame.
    """

    steps: Sequence[Frame]
    opening: Sequence[bytes] = ()
    closing: Sequence[bytes] = ()


@dataclass(frozen=True)
class Refusal:
    """The API's own answer to a request that breaks a rule it enforces (``check``)."""

    status: int
    body: bytes
    reason: str
    """The rule in words, for the failure message."""


class WireProtocol(abc.ABC):
    """A protocol the conformance suite can serve: subclass it, and set ``protocol`` to an
    instance in your suite class (docs/conformance.md, docs/adapter-guide.md).

    Implement ``recognise`` (which requests are this protocol's, streamed or not),
    ``stream`` (a played case as frames, each carrying its progress events, the completion
    marker in ``closing``), ``body`` (the unstreamed answer) and ``error_frame`` (an error in
    the middle of a stream); ``frame`` says the framing (SSE by default). Override
    ``play`` when the wire cannot say everything a case says (calls sent whole, its own
    finish reasons), ``reasoning`` for the receipt's reasoning parts, ``error_body`` and
    ``error_response`` for the API's error bodies, ``garbage_frame`` for a frame the client
    cannot read, and ``check`` for a rule the real API enforces on requests.

    The suite derives every expectation from the *played* case, so an adapter is held to
    exactly what the protocol sent.
    """

    name: ClassVar[str] = ""
    """How reports and messages name the protocol (``"ollama-chat"``)."""
    endpoint: ClassVar[str] = ""
    """Where the adapter must send its requests, in words (``"POST {base_url}/api/chat"``)."""
    root: ClassVar[str] = ""
    """The path ``upstream.base_url`` ends with (``"/v1"`` for OpenAI-compatible clients)."""
    content_type: ClassVar[str] = "text/event-stream"
    """The ``Content-Type`` of a streamed answer."""
    body_content_type: ClassVar[str] = "application/json"
    """The ``Content-Type`` of an unstreamed answer and of error bodies."""
    error_status: ClassVar[int] = 500
    """The HTTP status an unstreamed call gets for a case that fails with an error frame."""
    finish_reasons: ClassVar[Mapping[str, str]] = {}
    """The wire's word for each of the catalogue's finish reasons (``stop``, ``tool_calls``,
    ``length``) where it has its own; the receipt must carry the word as sent."""
    finishes: ClassVar[Mapping[str, str]] = {}
    """runport's own word (``ExecutionReceipt.finish``) for each of the wire's finish reasons
    that is not one already: the receipt must carry it beside the word as sent."""
    features: ClassVar[frozenset[str]] = frozenset()
    """What the wire can say beyond the common ground, such as ``"redacted_reasoning"`` (a redacted
    reasoning block, a signature without text), ``"cut_turns"`` (a turn ended by the
    output-token limit, ``finish_reason`` ``length``), ``"cut_calls"`` (a call cut
    mid-arguments), ``"refusals"`` (``content_filter``), ``"pause_turns"`` (``pause``),
    ``"cache_usage"`` (a ``UsageStep``'s ``cache_read``), ``"cache_writes"`` (its
    ``cache_write``), ``"citations"`` (a ``Cite``), ``"server_tools"`` (a ``ServerTool``) and
    ``"files"`` (a ``Generated`` file). A case that needs a feature is played only by
    protocols that have it."""
    in_process: ClassVar[bool] = False
    """True for the one protocol an adapter plays in-process (``scenario``): no server; each
    transcript's frames are ``runport.mock/v1`` events as JSON, one turn of
    ``upstream.scenario`` per case, and every fault is the error frame."""

    # -- the request ------------------------------------------------------------------------

    @abc.abstractmethod
    def recognise(self, request: WireRequest) -> bool | str:
        """``True`` when ``request`` asks for a streamed answer, ``False`` for one body, or
        a string saying where requests must go (the upstream answers 404 with it)."""

    def check(self, request: WireRequest, case: Case) -> Refusal | None:
        """The API's own refusal when ``request`` breaks a rule the real API enforces
        (``case.sends_back`` holds what the request must carry back); ``None`` otherwise."""
        return None

    def request_problems(self, request: WireRequest, sent: ExecutionRequest) -> list[str]:
        """What ``request`` (what the adapter sent) lacks or gets wrong of ``sent`` (the
        ``ExecutionRequest`` the suite gave it): the tools, the ask for structured output,
        the conversation so far, each problem naming the field. ``test_receipt_matches_case``
        reports them; by default none (nothing is checked)."""
        return []

    # -- the case as this wire plays it -------------------------------------------------------

    def play(self, case: Case) -> Case:
        """``case`` as this wire can say it, for rendering and for every expectation. The
        default keeps the steps (a reasoning step with no text only where the wire has
        ``redacted_reasoning``) and renames the finish reason (``finish_reasons``). Must be
        idempotent: a played case plays as itself. Cache writes are dropped where the wire has
        no ``cache_writes``, server tools where it has no ``server_tools``, generated files
        where it has no ``files``."""
        steps = case.steps
        if "redacted_reasoning" not in self.features:
            steps = tuple(step for step in steps if not _empty_thought(step))
        if "server_tools" not in self.features:
            steps = tuple(step for step in steps if not isinstance(step, ServerTool))
        if "files" not in self.features:
            steps = tuple(step for step in steps if not isinstance(step, Generated))
        if "cache_writes" not in self.features:
            steps = tuple(
                replace(step, cache_write=0)
                if isinstance(step, UsageStep) and step.cache_write
                else step
                for step in steps
            )
        reason = case.finish_reason
        if reason is not None:
            reason = self.finish_reasons.get(reason, reason)
        finish = self.finishes.get(reason or "", case.finish)
        if steps == case.steps and reason == case.finish_reason and finish == case.finish:
            return case
        return replace(case, steps=steps, finish_reason=reason, finish=finish)

    def reasoning(self, case: Case) -> list[dict[str, Any]]:
        """The receipt's ``reasoning`` (as JSON) for a played case: by default one part per
        reasoning block, its text joined, with the ``provider_metadata`` that
        ``reasoning_metadata`` gives it."""
        parts: list[dict[str, Any]] = []
        for number, block in enumerate(thought_blocks(case)):
            part: dict[str, Any] = {"text": "".join(step.text for step in block)}
            metadata = self.reasoning_metadata(number, block, block_signature(block))
            if metadata is not None:
                part["provider_metadata"] = metadata
            parts.append(part)
        return parts

    def reasoning_metadata(
        self, number: int, block: Sequence[Thought], signature: str | None
    ) -> dict[str, Any] | None:
        """The ``provider_metadata`` of the ``number``-th reasoning block (``signature`` is
        the one it carried, if any); by default none."""
        return None

    def sent_back(self, case: Case) -> Any:
        """What the next request of a tool run must carry back of ``case``'s reasoning, when
        the real API enforces it (``check`` then refuses a request without it); ``None``
        (the default) when it does not, and ``test_reasoning_sent_back`` skips."""
        return None

    def played(self, case: Case) -> Case:
        """``play``, with the receipt's reasoning the protocol expects written into the case
        (``Case.expected_reasoning``): what the suite runs and judges."""
        case = self.play(case)
        expected = tuple(self.reasoning(case)) if case.reasons else None
        if expected == case.expected_reasoning:
            return case
        return replace(case, expected_reasoning=expected)

    # -- the answer ---------------------------------------------------------------------------

    def frame(self, payload: bytes) -> bytes:
        """One frame of the stream around ``payload`` (SSE ``data:`` by default; an NDJSON
        protocol returns ``payload + b"\\n"``)."""
        return b"data: " + payload + b"\n\n"

    @abc.abstractmethod
    def stream(self, case: Case, context: WireContext) -> Transcript:
        """A played case as a streamed answer."""

    @abc.abstractmethod
    def body(self, case: Case, context: WireContext) -> bytes:
        """A played case as an unstreamed answer (the case succeeds, or is oversize)."""

    @abc.abstractmethod
    def error_frame(self, case: Case, context: WireContext) -> bytes:
        """The frame an upstream sends when it fails in the middle of a stream, after the
        case's steps (``case.fault.code`` says which error: a server error unless the wire
        has ``coded_error_frames``)."""

    def error_response(self, case: Case, context: WireContext) -> tuple[int, bytes]:
        """An unstreamed call's answer for a case that fails with an error frame: by default
        ``error_status`` with that status's ``error_body``."""
        return self.error_status, self.error_body(self.error_status, context)

    def garbage_frame(self, context: WireContext) -> bytes:
        """A frame the client cannot read: by default the framing around JSON cut short."""
        return self.frame(b'{"runport-conformance": ' + context.marker.encode())

    def error_body(self, status: int, context: WireContext) -> bytes:
        """The API's error body for HTTP ``status`` (429 and 503 before any frame, and
        ``error_status`` for an unstreamed error)."""
        message = f"{context.marker} scripted HTTP {status}"
        return json_bytes({"error": {"code": status, "message": message}})

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def _empty_thought(step: object) -> bool:
    return isinstance(step, Thought) and not step.text
