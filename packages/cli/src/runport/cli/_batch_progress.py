"""The progress of ``runport batch`` on a terminal: a rich bar with rows/s, failures, ETA.

Imported only when stderr is a terminal, so a piped batch never loads rich.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from runport.application import BatchLine
from runport.cli._safe import raw


class _Rate(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("… rows/s" if speed is None else f"{speed:,.0f} rows/s")


@contextmanager
def progress_bar(err: TextIO, total: int | None) -> Iterator[_Tracker]:
    """A live bar on ``err`` for the rows still to run; stopped however the batch ends."""
    progress = Progress(
        TextColumn("batch"),
        BarColumn(),
        MofNCompleteColumn(),
        _Rate(),
        TextColumn("{task.fields[failed]} failed"),
        TimeRemainingColumn(),
        console=Console(file=raw(err), highlight=False),
        transient=False,
    )
    task = progress.add_task("batch", total=total, failed=0)
    with progress:
        yield _Tracker(progress, task)


class _Tracker:
    def __init__(self, progress: Progress, task: object) -> None:
        self.progress = progress
        self.task = task
        self.failed = 0

    def __call__(self, line: BatchLine) -> None:
        self.failed += not line.ok
        self.progress.update(self.task, advance=1, failed=self.failed)  # type: ignore[arg-type]
