"""What the command writes never drives the terminal it writes to.

Model text, upstream error messages, file contents and names a contract chose all reach stdout
or stderr; a control character among them could move the cursor, recolour the screen, retitle
the window or hide what came before. Every such character is written as its visible ``\\uXXXX``
escape instead — inside a JSON string that is the same value, so JSON output stays valid and
equal; line feeds and tabs stay, they are layout.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO, cast

from runport.core import redact_secrets

_KEPT = {"\n", "\t"}
_CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))]
_ESCAPES = {ord(c): f"\\u{ord(c):04x}" for c in _CONTROLS if c not in _KEPT}
_ESCAPES.update({0x2028: "\\u2028", 0x2029: "\\u2029"})


def printable(text: str) -> str:
    """``text`` with every terminal control character replaced by its visible escape."""
    return text.translate(_ESCAPES)


class SafeStream:
    """A text stream that writes through :func:`printable`; everything else is the raw
    stream's (``buffer`` included, so a byte protocol such as MCP's stdio is untouched).

    With ``redact`` (stderr: errors, reports, log records) credentials in the text are
    redacted too (``runport.core.redact_secrets``, docs/security.md).
    """

    def __init__(self, raw: TextIO, *, redact: bool = False) -> None:
        self.raw = raw
        self.redact = redact

    def write(self, text: str) -> int:
        if self.redact:
            text = redact_secrets(text)
        return self.raw.write(printable(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def raw(stream: TextIO) -> TextIO:
    """The stream under a :class:`SafeStream` — for rich, which writes its own escapes and is
    handed only text already made printable."""
    return stream.raw if isinstance(stream, SafeStream) else stream


@contextmanager
def terminal_safe() -> Iterator[None]:
    """Route ``sys.stdout`` and ``sys.stderr`` through :class:`SafeStream` while a command runs."""
    out, err = sys.stdout, sys.stderr
    safe_out, safe_err = SafeStream(out), SafeStream(err, redact=True)
    sys.stdout, sys.stderr = cast(TextIO, safe_out), cast(TextIO, safe_err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
