"""The ``Pacer``: the handshake by which a paced upstream withholds each next frame until the
suite's recording sink has seen the previous frame's event (law 4).

Nothing else coordinates the upstream with the sink, so nothing in the suite sleeps: the only
wait is ``PACING_BOUND`` of silence, which turns an adapter that holds an event back into a
verdict instead of a hang.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Final, Literal

__all__ = ["PACING_BOUND", "Pacer", "Pacing", "Wait"]

PACING_BOUND: Final = 2.0
"""Seconds a paced upstream waits for a frame's event before calling the adapter a buffer and
releasing the rest of the transcript."""


Wait = Literal["seen", "ended", "timeout"]
Pacing = Literal["every", "last", "off"]


class Pacer:
    """The handshake between the recording sink and a paced upstream (law 4).

    The sink reports how many progress events it has seen and when the call ended (or was
    stopped by the caller); the upstream waits, after writing a frame, until the sink has seen
    the frame's event, the call has ended, or ``PACING_BOUND`` has passed.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._seen = 0
        self._ended = False
        self._stopped = False
        self._armed = False

    @property
    def armed(self) -> bool:
        """Whether the suite's sink drives this pacer (a test using the upstream on its own,
        with a sink of its own, never starts a call, so nothing is withheld)."""
        with self._condition:
            return self._armed

    def start_call(self) -> None:
        with self._condition:
            self._armed = True
            self._seen = 0
            self._ended = False
            self._stopped = False

    def stop(self) -> None:
        """The caller stopped the call: what it did not see was not held back."""
        with self._condition:
            self._stopped = True
            self._ended = True
            self._condition.notify_all()

    @property
    def stopped(self) -> bool:
        with self._condition:
            return self._stopped

    def saw(self, count: int) -> None:
        with self._condition:
            self._seen = count
            self._condition.notify_all()

    def end(self) -> None:
        with self._condition:
            self._ended = True
            self._condition.notify_all()

    @property
    def ended(self) -> bool:
        with self._condition:
            return self._ended

    @property
    def seen(self) -> int:
        with self._condition:
            return self._seen

    def _moved(self, count: int, before: int) -> bool:
        return self._seen >= count or self._ended or self._seen != before

    def wait_for(self, count: int, timeout: float = PACING_BOUND) -> Wait:
        """Wait until the sink has seen ``count`` progress events or the call ended; time out
        only when the sink saw nothing new for ``timeout`` seconds (a client still working
        through a backlog is not holding anything back)."""
        with self._condition:
            while True:
                done = self._condition.wait_for(
                    partial(self._moved, count, self._seen), timeout=timeout
                )
                if not done:
                    return "timeout"
                if self._seen >= count:
                    return "seen"
                if self._ended:
                    return "ended"
