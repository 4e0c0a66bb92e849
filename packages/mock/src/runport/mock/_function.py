"""``FunctionRuntime``: a test double whose model is a function (docs/testing-with-mocks.md).

A scenario file is the right tool for a fixed script; a test that wants to say "the model
answers this, based on the request" in three lines wants a function. The handler gets the
request and an ``Emitter`` and says what the model streams; the runtime turns that into
events and a receipt through the same ``Turn`` machinery as ``ScriptedRuntime``, so the double
keeps the streaming law whatever the handler does with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import JsonValue

from runport.contracts import (
    AdapterDescriptor,
    CitationSource,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    Finish,
    StreamEvent,
)
from runport.mock._turn import FINISHES, UNSET, VERSION, Turn, TurnUsageError, discard
from runport.ports import PortError, RuntimeAdapter, Sink, check_byte_count

__all__ = [
    "CAPABILITIES",
    "Emitter",
    "FunctionDouble",
    "FunctionRuntime",
    "Handler",
    "RuntimeStats",
]

CAPABILITIES = ("streaming", "structured_output", "text", "tool_calls")


@dataclass(frozen=True)
class RuntimeStats:
    """What a runtime has done so far.

    ``attempts`` counts every call — failed and exhausted ones included — so a test can prove
    a retry policy made exactly the calls it should. ``elapsed_ms`` is virtual time: the sum of
    the delays played, since a test double never sleeps.
    """

    attempts: int = 0
    elapsed_ms: int = 0


class Counters:
    """The attempts, virtual time and requests of one double, shared between threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts = 0
        self.elapsed_ms = 0
        self.requests: list[ExecutionRequest] = []

    def stats(self) -> RuntimeStats:
        with self.lock:
            return RuntimeStats(self.attempts, self.elapsed_ms)

    def start(
        self, request: ExecutionRequest, descriptor: AdapterDescriptor, limit: int | None
    ) -> Turn:
        """Count a call and open its turn."""
        with self.lock:
            self.attempts += 1
            self.requests.append(request)
        return Turn(request, descriptor, limit)

    def recorded(self) -> tuple[ExecutionRequest, ...]:
        with self.lock:
            return tuple(self.requests)

    def add_time(self, turn: Turn) -> None:
        if turn.elapsed_ms:
            with self.lock:
                self.elapsed_ms += turn.elapsed_ms


def ended(finish_reason: str | None, finish: object) -> tuple[str | None, Finish | None]:
    """``finish``'s arguments as ``Turn.finish`` takes them: ``finish`` checked to be one of
    runport's words (else the handler's mistake, said as one), and the word itself the
    ``finish_reason`` when none was given."""
    if finish is not None and finish not in FINISHES:
        words = ", ".join(FINISHES)
        raise TurnUsageError(f"finish must be one of runport's words ({words}), not {finish!r}")
    word: Finish | None = FINISHES[finish] if isinstance(finish, str) else None
    return (word if finish_reason is None else finish_reason), word


class EmitterCore:
    """What the sync and async emitters share: the turn, the caller's stop, and how a
    handler's ending becomes the turn's terminal."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.stopped: BaseException | None = None

    @property
    def request(self) -> ExecutionRequest:
        return self.turn.request

    def raised(self, error: BaseException) -> Failed:
        """The handler raised ``error``: the ``Failed`` to deliver before it propagates."""
        if error is self.stopped or (self.turn.done and error is self.turn.error):
            raise error
        if not isinstance(error, PortError):
            raise error
        if self.turn.done:
            raise TurnUsageError(
                "the handler raised a PortError after the turn's terminal event"
            ) from error
        return self.turn.fail(error)

    def returned(self) -> Complete | Failed | None:
        """The handler returned: the terminal still to deliver, if it never finished."""
        if self.stopped is not None:
            raise self.stopped
        if self.turn.error is not None:
            raise self.turn.error
        return None if self.turn.done else self.turn.implied_finish()

    def after(self, event: StreamEvent) -> None:
        if isinstance(event, Failed):
            assert self.turn.error is not None
            raise self.turn.error


class Emitter(EmitterCore):
    """What a ``FunctionRuntime`` handler says the model streams.

    Every method delivers its event to the caller at once (when the call is streamed). A
    failure is a raised ``PortError``; returning without ``finish`` finishes with ``stop``
    (``tool_calls`` when calls were made), and ``finish`` ends it any other way (``length``,
    ``content_filter``, ``pause``). An exception the caller's sink raised propagates
    through the handler and ends the call even if the handler catches it.
    """

    def __init__(self, turn: Turn, sink: Sink) -> None:
        super().__init__(turn)
        self._sink = sink

    def text(self, text: str) -> None:
        """A piece of the answer's text (one ``Delta``)."""
        self.send(self.turn.text(text))

    def reasoning(self, text: str, *, signature: str | None = None) -> None:
        """A piece of the model's reasoning (one ``ReasoningDelta``), never part of the answer.

        Pieces in a row form one block of the receipt's ``reasoning``; a ``signature`` ends
        the block (kept as ``{"mock": {"signature": ...}}``), and so does any text or tool
        call."""
        self.send(self.turn.reasoning(text, signature=signature))

    def tool_call_fragment(
        self,
        index: int,
        arguments_fragment: str,
        *,
        call_id: str | None = None,
        name: str | None = None,
    ) -> None:
        """A piece of tool call ``index``'s arguments; the call's first piece gives its name
        (``call_id`` defaults to ``call_<index>``)."""
        self.send(self.turn.fragment(index, arguments_fragment, call_id=call_id, name=name))

    def tool_call(self, name: str, arguments: JsonValue, *, call_id: str | None = None) -> None:
        """A whole tool call at the next index, its arguments sent as one fragment."""
        self.send(self.turn.tool_call(name, arguments, call_id=call_id))

    def server_tool_call(
        self,
        name: str,
        input: JsonValue = None,
        *,
        call_id: str | None = None,
        provider_metadata: dict[str, JsonValue] | None = None,
    ) -> None:
        """A tool the provider runs itself is announced (one ``ServerToolCall``, kept in the
        receipt's ``server_tools``; never a call the run makes). ``call_id`` defaults to
        ``srv_<n>``, counting the turn's server tool calls from 0."""
        self.send(
            self.turn.server_call(name, input, call_id=call_id, provider_metadata=provider_metadata)
        )

    def server_tool_result(
        self,
        call_id: str,
        output: JsonValue = None,
        *,
        error: str | None = None,
        provider_metadata: dict[str, JsonValue] | None = None,
    ) -> None:
        """What the server tool ``call_id`` returned, or its ``error`` (one
        ``ServerToolResult`` under the call's name); it answers a call announced before it,
        once."""
        self.send(
            self.turn.server_result(
                call_id, output, error=error, provider_metadata=provider_metadata
            )
        )

    def citation(
        self,
        source: str | CitationSource,
        *,
        title: str | None = None,
        cited_text: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> None:
        """A source the answer cites (one ``Citation``): a URL string (with its ``title``) or
        a ``CitationSource``; ``start``/``end`` are character offsets into the turn's text,
        and a span past the text fails the turn when it finishes, as a codec's would."""
        self.send(
            self.turn.citation(source, title=title, cited_text=cited_text, start=start, end=end)
        )

    def file(self, media_type: str, data: bytes | str, *, partial: bool = False) -> None:
        """A file the model generated (one ``FileDelta``): ``data`` is its bytes, or their
        base64 as a provider sends it. A whole one (not ``partial``) is kept in the receipt's
        ``files``; bytes that are not its media type fail the turn
        (``TQX_RUNTIME_INVALID_RESPONSE``), and it counts against ``max_response_bytes``."""
        self.send(self.turn.file(media_type, data, partial=partial))

    def usage(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        reasoning_tokens: int | None = None,
        *,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
    ) -> None:
        """Token counts, summed over the turn (``reasoning_tokens``: of the output, those
        spent reasoning; ``cache_read_tokens`` and ``cache_write_tokens``: of the input, those
        read from and written to the prompt cache)."""
        self.turn.usage(
            input_tokens,
            output_tokens,
            reasoning_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
        )

    def delay(self, ms: int) -> None:
        """Advance the runtime's virtual clock (``stats().elapsed_ms``); never sleeps."""
        self.turn.delay(ms)

    def finish(
        self,
        finish_reason: str | None = None,
        *,
        output: JsonValue = UNSET,
        finish: Finish | None = None,
    ) -> None:
        """End the turn; ``output`` overrides what the text would give.

        ``finish_reason`` is the provider's word, and one of runport's own (``length``,
        ``content_filter``, ``pause``, …) is the receipt's ``finish`` too; ``finish`` names
        runport's word for any other (``emit.finish("max_tokens", finish="length")``,
        ``emit.finish("pause_turn", finish="pause")``), so a handler ends a turn every way a
        provider does and a run judges it as it would that provider's."""
        reason, word = ended(finish_reason, finish)
        self.send(self.turn.finish(reason, output=output, finish=word))

    def send(self, event: StreamEvent) -> None:
        if self.stopped is not None:
            raise self.stopped
        try:
            self._sink(event)
        except BaseException as error:
            self.stopped = error
            raise
        self.after(event)


Handler = Callable[[ExecutionRequest, Emitter], None]
H = TypeVar("H", bound=Callable[..., Any])


class FunctionDouble(Generic[H]):
    """What ``FunctionRuntime`` and ``AsyncFunctionRuntime`` share: the handler, the
    descriptor, the byte bound and the counters."""

    def __init__(
        self,
        handler: H,
        *,
        capabilities: Sequence[str] = CAPABILITIES,
        adapter_id: str = "runport-function",
        max_response_bytes: int | None = None,
    ) -> None:
        if not callable(handler):
            raise TypeError(f"{type(self).__name__} needs a callable handler, not {handler!r}")
        self._handler = handler
        self._descriptor = AdapterDescriptor(
            id=adapter_id,
            version=VERSION,
            capabilities=sorted(capabilities),
            provider="runport.mock",
        )
        self._max_response_bytes = check_byte_count(max_response_bytes)
        self._counters = Counters()

    def descriptor(self) -> AdapterDescriptor:
        return self._descriptor

    def stats(self) -> RuntimeStats:
        return self._counters.stats()

    @property
    def requests(self) -> tuple[ExecutionRequest, ...]:
        """Every request the runtime was called with, in call order."""
        return self._counters.recorded()

    def open_turn(self, request: ExecutionRequest) -> Turn:
        return self._counters.start(request, self._descriptor, self._max_response_bytes)


class FunctionRuntime(FunctionDouble[Handler], RuntimeAdapter):
    """A runtime adapter whose model is ``handler(request, emit)``.

    ``FunctionRuntime(lambda request, emit: emit.text("hello"))`` answers every call with
    ``hello``. ``execute`` and ``execute_streaming`` run the same handler, so their receipts
    are equal (law 2); the byte bound (``max_response_bytes``, the request's
    ``runtime_policy``) and the grammar are enforced whatever the handler emits. A handler
    mistake (an emit after the terminal, a broken grammar) raises ``TurnUsageError``; any other
    exception the handler raises that is not a ``PortError`` propagates unchanged, since it is
    the test's bug. Safe to share between threads if the handler is.
    """

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._call(request, discard)

    def execute_streaming(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        return self._call(request, sink)

    def _call(self, request: ExecutionRequest, sink: Sink) -> ExecutionReceipt:
        turn = self.open_turn(request)
        emit = Emitter(turn, sink)
        if turn.refused is not None:
            emit.send(turn.refused)
        try:
            try:
                self._handler(request, emit)
            except Exception as error:
                emit.send(emit.raised(error))
            ending = emit.returned()
            if ending is not None:
                emit.send(ending)
        finally:
            self._counters.add_time(turn)
        return turn.receipt()
