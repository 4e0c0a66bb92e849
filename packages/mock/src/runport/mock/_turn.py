"""One turn of a test double, with no I/O: what each step becomes on the stream.

``ScriptedRuntime``, ``FunctionRuntime`` and their async twins all play turns through a
``Turn``: it checks the grammar (core's ``StreamAssembler``), keeps the byte bound and sums
usage; the turn itself is assembled, and its receipt built, by core's ``TurnBuilder`` — the one
every codec assembles its turns in. Each method returns the event to deliver; the
drivers (a sync sink call, or an awaited async one) only deliver it and stop on a terminal, so
the law is kept in one place whichever way the events travel.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Final, TypeVar, get_args

from pydantic import JsonValue, ValidationError

from runport.contracts import (
    AdapterDescriptor,
    Citation,
    CitationSource,
    Complete,
    Delta,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    FileDelta,
    Finish,
    ProgressEvent,
    ReasoningDelta,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
    ToolCallDelta,
    Usage,
)
from runport.core import StreamAssembler, StreamGrammarError, TurnBuilder
from runport.ports import PortError, distribution_version, max_response_bytes_for

FINISHES: Final[dict[str, Finish]] = {word: word for word in get_args(Finish)}
"""A scripted ``finish_reason`` is runport's own word, so a scenario can end a turn every way
(``ExecutionReceipt.finish``); any other word is ``other``."""

__all__ = ["UNSET", "VERSION", "Turn", "TurnUsageError", "byte_size", "discard"]

VERSION: Final = distribution_version("runport-mock")

_T = TypeVar("_T", Failed, Complete)

UNSET: Any = object()
"""``finish``'s ``output`` when none was given: derive it from the text."""


def byte_size(piece: str) -> int:
    return len(piece.encode("utf-8", "surrogatepass"))


def discard(event: StreamEvent) -> None:
    """The sink of ``execute``: the same walk as streaming, with nobody listening."""


class TurnUsageError(ValueError):
    """A test double was told to do something no runtime may do (a stream that breaks the
    grammar, an emit after the terminal): the test's mistake, reported to its author."""


_E = TypeVar("_E", ServerToolCall, ServerToolResult, Citation, CitationSource, FileDelta)


def _made(model: type[_E], **fields: Any) -> _E:
    """An event of what the provider did itself, from a handler's arguments: fields no such
    event may have are the handler's mistake."""
    try:
        return model(**fields)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise TurnUsageError(f"a {model.__name__}: {where}: {problem['msg']}") from None


class Turn:
    """The state of one call: the assembled stream, the bytes played, usage, virtual time.

    Built per call, used on one thread. ``error`` is set when the turn ended in ``Failed``:
    the driver delivers that event, then raises ``error`` (law 5: same code on both).
    """

    def __init__(
        self, request: ExecutionRequest, descriptor: AdapterDescriptor, own_limit: int | None
    ) -> None:
        self.request = request
        self.descriptor = descriptor
        self.error: PortError | None = None
        self.elapsed_ms = 0
        self._assembler = StreamAssembler(grammar_only=True)
        # no call is announced without its arguments' text, so none is owed "{}" at the end
        self._builder = TurnBuilder(empty_arguments="", name_bounds=False)
        self._usage: Usage | None = None
        self._played = 0
        self._next_index = 0
        self._reasoning_open = False
        self._server_count = 0
        try:
            self._limit = max_response_bytes_for(request, own_limit)
        except PortError as error:
            self._limit = 0
            self.error = error

    @property
    def refused(self) -> Failed | None:
        """The ``Failed`` of a request the double cannot serve at all (an unusable bound)."""
        if self.error is None:
            return None
        return self._terminal(Failed(code=self.error.code, message=self.error.message))

    @property
    def done(self) -> bool:
        return self._assembler.done

    def text(self, text: str) -> StreamEvent:
        if not isinstance(text, str) or not text:
            raise TurnUsageError(f"a Delta must carry non-empty text, not {text!r}")
        return self.played(Delta(text=text), byte_size(text))

    def reasoning(self, text: str, *, signature: str | None = None) -> StreamEvent:
        """A piece of the model's reasoning (one ``ReasoningDelta``), joining the open block;
        a ``signature`` ends that block and is kept with it."""
        if not isinstance(text, str) or not text:
            raise TurnUsageError(f"a ReasoningDelta must carry non-empty text, not {text!r}")
        if signature is not None and (not isinstance(signature, str) or not signature):
            raise TurnUsageError(f"a reasoning signature is a non-empty string, not {signature!r}")
        event = self.played(ReasoningDelta(text=text), byte_size(text))
        if signature is not None and event.kind == "ReasoningDelta":
            self.sign(signature)
        return event

    def sign(self, signature: str) -> None:
        """End the open reasoning block with ``signature`` (played after its last piece)."""
        assert self._reasoning_open
        self._builder.reasoning_metadata({"mock": {"signature": signature}})
        self._reasoning_open = False

    def fragment(
        self,
        index: int,
        arguments_fragment: str,
        *,
        call_id: str | None = None,
        name: str | None = None,
    ) -> StreamEvent:
        """One piece of tool call ``index``; its first piece names it, later ones inherit."""
        builder = self._builder
        known = builder.call_identity(index) if builder.has_call(index) else None
        if known is None:
            if name is None:
                raise TurnUsageError(f"tool call {index}'s first fragment must give its name")
            known = (call_id or f"call_{index}", name)
        elif (call_id or known[0], name or known[1]) != known:
            raise TurnUsageError(
                f"tool call {index} changed identity: {known[0]}/{known[1]} became "
                f"{call_id or known[0]}/{name or known[1]}"
            )
        event = ToolCallDelta(
            index=index, call_id=known[0], name=known[1], arguments_fragment=arguments_fragment
        )
        return self.played(event, byte_size(arguments_fragment))

    def tool_call(
        self, name: str, arguments: JsonValue, *, call_id: str | None = None
    ) -> StreamEvent:
        """A whole call announced with its arguments as one fragment, at the next index."""
        index = self._next_index
        fragment = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        return self.fragment(index, fragment, call_id=call_id, name=name)

    def usage(
        self,
        input_tokens: int,
        output_tokens: int,
        reasoning_tokens: int | None = None,
        *,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
    ) -> None:
        self.add_usage(
            Usage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                reasoning_tokens=reasoning_tokens,
                cache_read_tokens=cache_read_tokens,
                cache_write_tokens=cache_write_tokens,
            )
        )

    def add_usage(self, played: Usage) -> None:
        self._check_open("usage")
        self._usage = played if self._usage is None else self._usage + played

    def delay(self, ms: int) -> None:
        """Virtual time: a double never sleeps."""
        self._check_open("delay")
        if isinstance(ms, bool) or not isinstance(ms, int) or ms <= 0:
            raise TurnUsageError(f"a delay is a positive whole number of ms, not {ms!r}")
        self.elapsed_ms += ms

    def finish(
        self,
        finish_reason: str | None = None,
        *,
        output: JsonValue = UNSET,
        finish: Finish | None = None,
    ) -> Complete | Failed:
        """The successful terminal. Without ``output`` it comes from the text; a turn with no
        text and no tool calls answers with the request's ``fixture_output``. Text or
        arguments past the JSON bounds fail the turn, as they would an adapter's."""
        self._check_open("finish")
        builder = self._builder
        explicit: dict[str, Any] = {}
        if output is not UNSET:
            explicit["output"] = output
        elif builder.empty:
            explicit["output"] = self.request.fixture_output
        if finish_reason is not None:
            builder.finished(finish_reason, FINISHES)
        if finish is not None:  # runport's word for a provider's own (a recorded turn)
            builder.finish = finish
        usage = self._usage
        if usage is not None:
            builder.usage = (usage.input_tokens, usage.output_tokens)
            builder.reasoning_tokens = usage.reasoning_tokens
            builder.cache_read_tokens = usage.cache_read_tokens
            builder.cache_write_tokens = usage.cache_write_tokens
        try:
            # parsing the assembled arguments and answer is where JSON past the bounds shows
            receipt = builder.receipt(self.request, self.descriptor, **explicit)
        except PortError as error:
            return self.fail(error)
        complete = Complete(receipt=receipt)
        self._terminal(complete)
        return complete

    def fail(self, error: PortError) -> Failed:
        """The failing terminal for ``error`` (law 5: the same code as the raise)."""
        self._check_open("a failure")
        self.error = error
        return self._terminal(Failed(code=error.code, message=error.message))

    def implied_finish(self) -> Complete | Failed:
        """The terminal of a turn its author simply ended: ``tool_calls`` after calls, else
        ``stop``."""
        return self.finish("tool_calls" if self._next_index else "stop")

    def receipt(self) -> ExecutionReceipt:
        terminal = self._assembler.terminal
        assert isinstance(terminal, Complete)
        return terminal.receipt

    def server_call(
        self,
        name: str,
        input: JsonValue = None,
        *,
        call_id: str | None = None,
        provider_metadata: dict[str, JsonValue] | None = None,
    ) -> StreamEvent:
        """A tool the provider runs itself is announced (``call_id`` defaults to
        ``srv_<n>``, counting this turn's server tool calls)."""
        self._server_count += 1
        return self.provided(
            _made(
                ServerToolCall,
                call_id=call_id or f"srv_{self._server_count - 1}",
                name=name,
                input=input,
                provider_metadata=provider_metadata or None,
            )
        )

    def server_result(
        self,
        call_id: str,
        output: JsonValue = None,
        *,
        error: str | None = None,
        provider_metadata: dict[str, JsonValue] | None = None,
    ) -> StreamEvent:
        """What server tool call ``call_id``, announced before and not yet answered,
        returned (or its ``error``), under the call's name."""
        name = self._builder.server_call_name(call_id)
        if name is None:
            raise TurnUsageError(
                f"a server tool result for call {call_id!r}, never announced or already answered"
            )
        return self.provided(
            _made(
                ServerToolResult,
                call_id=call_id,
                name=name,
                output=output,
                error=error,
                provider_metadata=provider_metadata or None,
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
    ) -> StreamEvent:
        """A source the answer cites: a URL (with its ``title``) or a ``CitationSource``;
        ``start``/``end`` are character offsets into the turn's text."""
        if isinstance(source, str):
            cited = _made(CitationSource, type="url", url=source, title=title)
        elif title is not None:
            raise TurnUsageError("a citation's title goes in its CitationSource")
        else:
            cited = source
        return self.provided(
            _made(Citation, source=cited, cited_text=cited_text, start=start, end=end)
        )

    def file(self, media_type: str, data: bytes | str, *, partial: bool = False) -> StreamEvent:
        """A file the model generated: ``data`` is its bytes (or their base64, as sent)."""
        if isinstance(data, bytes | bytearray):
            data = base64.b64encode(data).decode("ascii")
        return self.provided(_made(FileDelta, media_type=media_type, data=data, partial=partial))

    def provided(
        self, event: ServerToolCall | ServerToolResult | Citation | FileDelta
    ) -> StreamEvent:
        """What the provider did itself (a server tool call or result, a citation, a generated
        file), played as the event it is; its size is its JSON's (a file's: its base64)."""
        size = (
            byte_size(event.data) if isinstance(event, FileDelta) else len(event.model_dump_json())
        )
        return self.played(event, size)

    def played(self, event: ProgressEvent, size: int) -> StreamEvent:
        """Play a progress event of ``size`` bytes (what ``byte_size`` gives for its piece): a
        scripted runtime builds its deltas once per scenario and plays them here. Reasoning
        joins the open block (opening one if none is); any other progress ends it."""
        self._check_open(event.kind)
        if self._played + size > self._limit:
            return self.fail(
                PortError(
                    ErrorCode.RUNTIME_RESPONSE_TOO_LARGE,
                    f"the response passed max_response_bytes ({self._limit} bytes)",
                )
            )
        try:
            self._assembler.feed(event)
        except StreamGrammarError as error:
            raise TurnUsageError(str(error)) from None
        self._played += size
        # the piece it carries, into the turn (the double delivers the events it checked)
        if type(event) is ReasoningDelta:
            if not self._reasoning_open:
                self._builder.open_reasoning()
                self._reasoning_open = True
        else:
            self._reasoning_open = False  # any other progress ends the reasoning block
            if type(event) is ToolCallDelta and event.index >= self._next_index:
                self._next_index = event.index + 1
        try:
            self._builder.assemble(event)
        except PortError as error:  # a generated file that is not what it says, like a codec
            return self.fail(error)
        return event

    def _terminal(self, event: _T) -> _T:
        if not self._assembler.done:
            self._assembler.feed(event)
        return event

    def _check_open(self, what: str) -> None:
        if self._assembler.done:
            raise TurnUsageError(f"{what} after the turn's terminal event: nothing may follow it")
