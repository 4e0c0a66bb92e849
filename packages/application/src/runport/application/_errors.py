from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from runport.application._json import JSONResult
from runport.contracts import Diagnostic, ExecutionReceipt, Message

Stage = Literal["input", "compile", "model", "tool", "output"]


@dataclass(frozen=True)
class RunPartial(JSONResult):
    """What a run had when it failed: nothing the caller already saw is lost. JSON as events
    are (``model_dump_json``)."""

    receipts: tuple[ExecutionReceipt, ...] = ()
    messages: tuple[Message, ...] = ()
    text: str | None = None
    """What the failed turn had streamed before it ended (``None`` for a non-streamed turn)."""


class RunError(Exception):
    """A run that could not reach a valid answer, with the stage that failed and the evidence."""

    def __init__(
        self,
        stage: Stage,
        code: str,
        partial: RunPartial,
        message: str = "",
        *,
        diagnostics: tuple[Diagnostic, ...] = (),
    ) -> None:
        super().__init__(f"{code} at stage {stage}: {message}" if message else f"{code} at {stage}")
        self.stage: Stage = stage
        self.code = code
        self.partial = partial
        self.message = message
        self.diagnostics = diagnostics
