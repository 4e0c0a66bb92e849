"""Sphinx configuration for runport's docs site (adr/0010-docs-site.md).

The pages are the Markdown files in this folder (read through MyST); ``api/`` documents every
package's ``__all__`` from docstrings. The build runs nitpicky with warnings as errors, offline:
a broken link, a missing reference or an undocumented public name fails it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "runport"
author = "the runport authors"
copyright = "2026, the runport authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "runport_docs",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

nitpicky = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_inherit_docstrings = False

# Types from outside runport that signatures name. The build is offline (no intersphinx), so
# these cannot resolve; listing them here keeps every *runport* reference checked. Private
# runport types (a ``_module`` in the path) are handled in _ext/runport_docs.py instead.
_BUILTINS = r"(str|int|float|bool|bytes|object|dict|list|tuple|set|frozenset|type|None)"
_STDLIB = (
    r"(typing|typing_extensions|collections|abc|enum|types|pathlib|os|datetime|threading|uuid)"
)
nitpick_ignore_regex = [
    ("py:.*", rf"~?{_BUILTINS}"),
    ("py:.*", rf"~?{_STDLIB}(\..*)?"),
    ("py:.*", r"~?(importlib\.metadata|http\.server|socketserver|logging|asyncio)\..*"),
    ("py:.*", r"~?(Exception|ValueError|BaseException|LookupError|KeyError|RuntimeError)"),
    ("py:.*", r"~?(Any|Literal|Callable|Iterator|Iterable|Mapping|Sequence|Awaitable|Self)"),
    # third-party libraries runport builds on
    (
        "py:.*",
        r"~?(pydantic|pydantic_core|httpx|mcp|anyio|pytest|_pytest|hypothesis|opentelemetry|starlette|uvicorn)(\..*)?",
    ),
    ("py:.*", r"~?(JsonValue|BaseModel)"),
]

html_theme = "alabaster"
html_title = "runport"
