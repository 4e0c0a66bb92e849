"""Where the batch's workers take their next row from.

Rows from a regular file or from memory are taken directly: reading them never waits. Rows
from a pipe (a FIFO, standard input) may wait on a writer for as long as it likes, so they are
read on a daemon thread and handed over through a bounded queue: the event loop is never
stuck in a read, so cancellation (Ctrl-C) stops the batch at once, and a reader still blocked
when the process exits does not hold it up.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from runport.application._batch._rows import BatchRow

_AHEAD = 1024


class RowSource:
    """``await take()`` gives the next row, or ``None`` once the rows are spent."""

    def __init__(self, rows: Iterator[BatchRow]) -> None:
        self._rows = rows

    async def take(self) -> BatchRow | None:
        return next(self._rows, None)

    def start(self) -> None:
        """Begin reading (nothing to begin for rows that never wait)."""


class PipedRows(RowSource):
    def __init__(self, rows: Iterator[BatchRow]) -> None:
        super().__init__(rows)
        self._queue: asyncio.Queue[BatchRow | None] = asyncio.Queue()
        self._room = threading.Semaphore(_AHEAD)
        self._spent = False

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, args=(loop,), daemon=True).start()

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            for row in self._rows:
                self._room.acquire()
                loop.call_soon_threadsafe(self._queue.put_nowait, row)
        finally:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(self._queue.put_nowait, None)

    async def take(self) -> BatchRow | None:
        if self._spent:
            return None
        row = await self._queue.get()
        if row is None:
            self._spent = True
            return None
        self._room.release()
        return row


def waits(path: str | os.PathLike[str]) -> bool:
    """Whether reading ``path`` may wait on a writer (a pipe, a character device)."""
    try:
        mode = Path(path).stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode)
