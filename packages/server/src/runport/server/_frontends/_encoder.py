"""What every frontend encoder shares: the run-event dispatch and the loop that writes one
chunk of frames per run event (``data_frames``), the run's ending included."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from typing import Any, ClassVar

from runport import contracts
from runport.application import RunError, SnapshotPace
from runport.contracts import RunEvent
from runport.server._frames import data_frames


class RunEventEncoder(ABC):
    r"""One protocol's state for one run: ``start`` and ``end`` make the run's first and last
    payloads, ``encode`` the payloads one run event owes, through one method per event kind
    (a run's ``OutputSnapshot``\s thinned by ``SnapshotPace`` first)."""

    def __init__(self) -> None:
        self._pace = SnapshotPace()
        # by kind: a subclass of a run event's type (core's snapshots, built on access) too
        self._encoders: dict[str, Callable[[Any, list[bytes]], None]] = {
            "Delta": self._delta,
            "ReasoningDelta": self._reasoning_delta,
            "ToolCallDelta": self._tool_call_delta,
            "Complete": self._complete,
            "Failed": self._failed,
            "ToolResult": self._tool_result,
            "ToolProgress": self._tool_progress,
            "SubRunEvent": self._sub_run,
            "OutputSnapshot": self._snapshot,
            "AnswerRejected": self._rejected,
            "ServerToolCall": self._server_tool_call,
            "ServerToolResult": self._server_tool_result,
            "Citation": self._citation,
            "FileDelta": self._file,
            "ToolApprovalRequest": self._approval_request,
            "ClientToolCall": self._client_call,
        }

    def encode(self, event: RunEvent) -> list[bytes]:
        out: list[bytes] = []
        # Snapshots are written whole (or diffed whole): thinned, so that together they weigh
        # what the answer does times a constant, not times its length (SnapshotPace).
        encoders = self._encoders
        for shown in self._pace(event):
            encoders[shown.kind](shown, out)
        return out

    @abstractmethod
    def start(self) -> list[bytes]: ...

    @abstractmethod
    def end(self, error: RunError | None = None) -> list[bytes]: ...

    @abstractmethod
    def _delta(self, event: contracts.Delta, out: list[bytes]) -> None: ...

    @abstractmethod
    def _reasoning_delta(self, event: contracts.ReasoningDelta, out: list[bytes]) -> None: ...

    @abstractmethod
    def _tool_call_delta(self, event: contracts.ToolCallDelta, out: list[bytes]) -> None: ...

    # What the provider did itself (adr/0064): a protocol without parts for one of these
    # writes nothing for it; the turn's ``Complete`` receipt carries it.

    def _server_tool_call(self, event: contracts.ServerToolCall, out: list[bytes]) -> None:
        return

    def _server_tool_result(self, event: contracts.ServerToolResult, out: list[bytes]) -> None:
        return

    def _citation(self, event: contracts.Citation, out: list[bytes]) -> None:
        return

    def _file(self, event: contracts.FileDelta, out: list[bytes]) -> None:
        return

    def _tool_progress(self, event: contracts.ToolProgress, out: list[bytes]) -> None:
        """What a generator tool yielded while it ran: a protocol without a part for it writes
        nothing here; the call's ``ToolResult`` follows."""
        return

    def _sub_run(self, event: contracts.SubRunEvent, out: list[bytes]) -> None:
        """An event of a sub-run (a tool that is a run): a protocol without a part for it
        writes nothing here; the call's ``ToolResult`` carries the sub-run's output."""
        return

    # A person in the loop (adr/0069): a protocol that carries a paused run sets ``pauses``.

    pauses: ClassVar[bool] = False
    client_calls: ClassVar[bool] = False
    """Whether the protocol carries a run paused at a call of a client tool (``Tool.client``)."""

    def _approval_request(self, event: contracts.ToolApprovalRequest, out: list[bytes]) -> None:
        """A call the run holds for a person's decision."""
        return

    def _client_call(self, event: contracts.ClientToolCall, out: list[bytes]) -> None:
        """A call the run holds for the client to run (``Tool.client``): its input was
        already streamed with the model's turn."""
        return

    def pause(self, continuation: str) -> None:
        """The run paused: ``end`` carries ``continuation`` (sealed) for the next request."""
        raise NotImplementedError(f"{type(self).__name__} carries no paused runs")

    @abstractmethod
    def _complete(self, event: contracts.Complete, out: list[bytes]) -> None: ...

    @abstractmethod
    def _failed(self, event: contracts.Failed, out: list[bytes]) -> None: ...

    @abstractmethod
    def _tool_result(self, event: contracts.ToolResult, out: list[bytes]) -> None: ...

    @abstractmethod
    def _snapshot(self, event: contracts.OutputSnapshot, out: list[bytes]) -> None: ...

    @abstractmethod
    def _rejected(self, event: contracts.AnswerRejected, out: list[bytes]) -> None: ...


async def encoded(
    encoder: RunEventEncoder, events: AsyncIterable[RunEvent], closing: Sequence[bytes] = ()
) -> AsyncIterator[bytes]:
    """``events`` through ``encoder``: one chunk per run event; a ``RunError`` the events
    raise ends the stream the way ``encoder.end`` says, then the ``closing`` payloads."""
    yield data_frames(encoder.start())
    try:
        async for event in events:
            payloads = encoder.encode(event)
            if payloads:
                yield data_frames(payloads)
    except RunError as error:
        yield data_frames([*encoder.end(error), *closing])
        return
    yield data_frames([*encoder.end(), *closing])
