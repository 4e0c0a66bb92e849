"""Decoders for the two shapes a JSON-over-HTTP provider answers in — an event stream of JSON
frames, or one JSON body — both assembling into a ``TurnBuilder``, so a codec writes only
what one frame or one body means (docs/codecs.md)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, Self

from pydantic_core import from_json

from runport.contracts import (
    AdapterDescriptor,
    ErrorCode,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
)
from runport.core import TurnBuilder
from runport.http._codec import ResponseDecoder
from runport.http._sse import SSEDecoder
from runport.ports import PortError

__all__ = ["JSONTurnDecoder", "SSETurnDecoder", "TurnDecoder", "json_object"]


def json_object(data: bytes, what: str) -> dict[str, Any]:
    """``data`` decoded as one JSON object, else ``INVALID_RESPONSE`` naming ``what``.

    ``pydantic_core.from_json``: about 3× faster than ``json.loads`` on a frame, and it
    refuses a lone surrogate escape, which could not be fingerprinted (ADR 0006).
    """
    try:
        value = from_json(data)
    except ValueError:
        raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, f"{what} is not JSON") from None
    if type(value) is not dict:
        raise PortError(ErrorCode.RUNTIME_INVALID_RESPONSE, f"{what} is not a JSON object")
    return value


class TurnDecoder(ResponseDecoder):
    """A decoder whose answer is one ``TurnBuilder``; ``marker`` names the completion marker
    in the truncation message, ``empty_arguments`` is the builder's (what a call whose
    arguments never came holds). ``secrets`` are the strings its errors must not show.

    The base of ``SSETurnDecoder`` and ``JSONTurnDecoder``: a provider whose two decoders keep
    the same per-call state (an assembly beside the builder) makes it in ``begin``, once, in a
    subclass of this mixed into both; ``for_codec`` is a decoder class as a
    ``JSONAPICodec``'s ``DecoderFactory``.
    """

    marker = "its completion marker"
    empty_arguments = "{}"

    def __init__(
        self, request: ExecutionRequest, adapter: AdapterDescriptor, secrets: tuple[str, ...] = ()
    ) -> None:
        self.request = request
        self.adapter = adapter
        self.secrets = secrets
        self.turn = TurnBuilder(empty_arguments=self.empty_arguments)
        self.complete = False
        self.finished = False
        self.begin()

    @classmethod
    def for_codec(
        cls, request: ExecutionRequest, secrets: tuple[str, ...], adapter: AdapterDescriptor
    ) -> Self:
        """A decoder for one call, made as a ``DecoderFactory`` is called."""
        return cls(request, adapter, secrets)

    def begin(self) -> None:
        """Make the per-call state a subclass keeps beside ``self.turn`` (none by default)."""

    def completed(self, step: Callable[..., object], *arguments: Any) -> Iterator[StreamEvent]:
        """``step(*arguments)``, one frame's work on the turn, then the events it completed;
        when it raises, the events it completed before the failure first. For a ``feed``
        of its own (an eventstream's; a fast path for frames of the usual shape) to hand
        the rest on alike."""
        events = self.turn.events
        try:
            step(*arguments)
        except PortError:
            yield from events  # what the frame completed before it failed
            events.clear()
            raise
        if events:
            yield from events
            events.clear()

    def receipt(self) -> ExecutionReceipt:
        if not self.complete:
            raise PortError(
                ErrorCode.RUNTIME_STREAM_TRUNCATED,
                f"the response ended before {self.marker}",
            )
        return self.turn.receipt(self.request, self.adapter)


class SSETurnDecoder(TurnDecoder):
    """An event stream; ``frame`` is handed each event whole, in order, and sets ``complete``
    (and ``finished``, when nothing after it matters) as the protocol says.

    ``feed`` is a generator: each frame's events are delivered before the next frame is
    read, and a failure raised by a frame reaches the caller after the events before it
    (docs/streaming-law.md, laws 4 and 5).
    """

    def __init__(
        self, request: ExecutionRequest, adapter: AdapterDescriptor, secrets: tuple[str, ...] = ()
    ) -> None:
        self._sse = SSEDecoder()
        super().__init__(request, adapter, secrets)

    def feed(self, data: bytes) -> Iterator[StreamEvent]:
        for event, payload in self._sse.feed(data):
            yield from self.completed(self.frame, event, payload)
            if self.finished:
                return

    @abstractmethod
    def frame(self, event: str, payload: bytes) -> None: ...


class JSONTurnDecoder(TurnDecoder):
    """One JSON body, handed to ``body`` when it has all arrived; the same assembly as the
    stream's, so ``execute`` and ``execute_streaming`` agree (law 2)."""

    def __init__(
        self, request: ExecutionRequest, adapter: AdapterDescriptor, secrets: tuple[str, ...] = ()
    ) -> None:
        self._parts: list[bytes] = []
        super().__init__(request, adapter, secrets)

    def feed(self, data: bytes) -> list[StreamEvent]:
        self._parts.append(data)
        return []

    def end(self) -> list[StreamEvent]:
        data = b"".join(self._parts)
        self._parts.clear()
        events: list[StreamEvent] = []
        self.turn.events = events
        self.complete = self.body(data)
        return events

    @abstractmethod
    def body(self, data: bytes) -> bool:
        """Assemble the body; ``True`` when it carried the completion marker."""
