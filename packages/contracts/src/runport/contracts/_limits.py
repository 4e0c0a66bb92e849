"""The bounds on JSON that every layer shares (docs/limits.md).

They live in the contracts package because every other package imports it: an adapter's
parser, core's document decoder and the receipt builder refuse the same shapes.
"""

from __future__ import annotations

from typing import Final

MAX_JSON_DEPTH: Final = 64
"""How many arrays and objects may nest inside one another in any JSON value runport reads.

Deep enough for any real schema, answer or tool call; shallow enough that every recursive
walk (encoding, fingerprinting, validation) stays far from Python's recursion limit.
"""

MAX_INT_DIGITS: Final = 4300
"""The most decimal digits an integer may have: Python's own ceiling for converting between
``int`` and text, so a larger number can neither be parsed nor fingerprinted."""

MAX_PART_BYTES: Final = 20 * 1024 * 1024
"""The most bytes the image and file parts of one request may hold together, decoded (20 MiB).

One part past it is refused where it is made (``TQX_REQUEST_TOO_LARGE``); a contract's parts are
counted together when it compiles. A provider with a smaller bound of its own (Anthropic's 5 MB
an image, Gemini's 20 MB a request) has its codec refuse a part past it before anything is sent.
"""
