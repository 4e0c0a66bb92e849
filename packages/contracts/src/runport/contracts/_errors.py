from __future__ import annotations

import re

from runport.contracts._codes import ErrorCode

_CODE = re.compile(r"^[A-Z][A-Z0-9_]*$")


class PortError(Exception):
    """The one exception adapters raise for runtime failures.

    ``code`` is a stable ``TQX_*`` code (docs/wire-types.md). ``message`` must never contain API
    keys or
    provider response bodies. ``retry_after_ms`` carries the upstream's back-off hint, when it
    gave one; ``detail`` is free, non-secret context for humans.
    """

    def __init__(
        self,
        code: ErrorCode | str,
        message: str,
        *,
        retry_after_ms: int | None = None,
        detail: str | None = None,
    ) -> None:
        if not _CODE.match(str(code)):
            # Checked here, at the raise site, so a bad code is the adapter author's error and
            # not a crash later when the code is projected into a Failed event or a Diagnostic.
            raise ValueError(f"PortError code must look like TQX_SOME_CODE, not {str(code)!r}")
        super().__init__(f"{code}: {message}")
        self.code = str(code)
        self.message = message
        self.retry_after_ms = retry_after_ms
        self.detail = detail

    @property
    def retryable(self) -> bool:
        """Whether a non-streamed call may be tried again (docs/wire-types.md)."""
        try:
            return ErrorCode(self.code).retryable
        except ValueError:
            return False

    def __repr__(self) -> str:
        extra = "" if self.retry_after_ms is None else f", retry_after_ms={self.retry_after_ms}"
        return f"PortError({self.code!r}, {self.message!r}{extra})"
