"""runport's own Sphinx extension: what keeps the docs site from drifting from the code.

- ``{error-code-table}`` renders the error-code table from ``runport.contracts.ErrorCode``
  at build time (code, meaning, retryable), so the page cannot disagree with the enum.
- Public names are documented at their package (``runport.core.Scenario``), while signatures
  name them by their private home (``runport.core._scenario.Scenario``) or bare (string
  annotations). A reference of either form resolves to the public entry; anything else stays
  missing, and the nitpicky build fails on it.
- After reading, every name in every ``runport.*`` package's ``__all__`` must have an entry in
  the built inventory; one without is a warning, which the ``-W`` build turns into a failure.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


def runport_packages() -> list[str]:
    """Every installed ``runport.*`` package, found through the namespace's path."""
    import runport

    return sorted(
        f"runport.{info.name}"
        for info in pkgutil.iter_modules(runport.__path__)
        if info.ispkg and not info.name.startswith("_")
    )


def public_names() -> dict[str, str]:
    """Fully qualified public name → its package, from each package's ``__all__``."""
    names: dict[str, str] = {}
    for package in runport_packages():
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            names[f"{package}.{name}"] = package
    return names


class ErrorCodeTable(SphinxDirective):
    """The ``ErrorCode`` table, one row per member in declaration order."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from runport.contracts import ErrorCode

        table = nodes.table(classes=["error-codes"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (34, 56, 10):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        head += _row(
            [nodes.Text("code"), nodes.Text("meaning"), nodes.Text("retryable (non-streamed)")]
        )
        body = nodes.tbody()
        group += body
        for code in ErrorCode:
            warning = code is ErrorCode.TOOL_CALLS_PENDING
            body += _row(
                [
                    nodes.literal(text=code.value),
                    nodes.Text(code.meaning),
                    nodes.Text("—" if warning else ("yes" if code.retryable else "no")),
                ]
            )
        return [table]


def _row(cells: list[nodes.Node]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += nodes.paragraph("", "", cell)
        row += entry
    return row


def _resolve_private(
    app: Sphinx, env: BuildEnvironment, node: Any, contnode: nodes.Element
) -> nodes.Element | None:
    if node.get("refdomain") != "py":
        return None
    target: str = node["reftarget"]
    parts = target.split(".")
    candidates: list[str] = []
    if len(parts) > 2 and parts[0] == "runport" and not parts[-1].startswith("_"):
        public = [part for part in parts if not part.startswith("_")]
        candidates.append(".".join(public))
        if len(public) > 3:
            candidates.append(".".join(public[:2] + public[-1:]))
    elif len(parts) == 1:
        domain = env.get_domain("py")
        candidates.extend(
            name
            for name in domain.objects  # type: ignore[attr-defined]
            if name.startswith("runport.") and name.rsplit(".", 1)[-1] == target
        )
    domain = env.get_domain("py")
    objects = domain.objects  # type: ignore[attr-defined]
    found = [name for name in dict.fromkeys(candidates) if name in objects]
    if len(found) != 1 or found[0] == target:
        return contnode if _is_private(target, node.get("py:module")) else None
    node["reftarget"] = found[0]
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], found[0], node, contnode
    )


def _is_private(target: str, module: str | None) -> bool:
    """A runport type that exists but is private by design (a field's helper model, a
    ``Literal`` alias): shown as plain text. Anything that does not exist still fails."""
    name = target.lstrip("~")
    if name.startswith("runport."):
        home, _, attribute = name.rpartition(".")
        if not any(part.startswith("_") for part in home.split(".")):
            return False
        try:
            return hasattr(importlib.import_module(home), attribute)
        except ImportError:
            return False
    if "." in name or not module or not module.startswith("runport."):
        return False
    return any(
        hasattr(loaded, name)
        for loaded_name, loaded in list(sys.modules.items())
        if loaded_name.startswith(f"{module}._")
    )


def _check_public_names(app: Sphinx, env: BuildEnvironment) -> None:
    objects = env.get_domain("py").objects  # type: ignore[attr-defined]
    for name, package in sorted(public_names().items()):
        if name not in objects:
            logger.warning(
                "%s is in %s.__all__ but not documented (add it to docs/api/%s.md)",
                name,
                package,
                package.removeprefix("runport."),
            )


def strip_annotated(text: str) -> str:
    """``Annotated[X, metadata…]`` → ``X``, at any depth of a stringified annotation.

    A pydantic field's constraints (``Field(min_length=1)``) and a discriminated union's
    ``Field(discriminator=...)`` would otherwise be printed, repr and all, into every type
    the API pages show; the constraints are the models' business, the type is the reader's.
    """
    while True:
        found = re.search(r"~?(typing\.)?Annotated\[", text)
        if found is None:
            return text
        depth, first_end, index = 0, None, len(text)
        for index in range(found.end(), len(text)):
            char = text[index]
            if char in "[(":
                depth += 1
            elif char in "])":
                if depth == 0:
                    break
                depth -= 1
            elif char == "," and depth == 0 and first_end is None:
                first_end = index
        inner = text[found.end() : index if first_end is None else first_end]
        text = text[: found.start()] + inner.strip() + text[index + 1 :]


def _plain_types(
    app: Sphinx,
    what: str,
    name: str,
    obj: Any,
    options: Any,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str | None, str | None]:
    recorded = app.env.current_document.autodoc_annotations.get(name, {})
    for key, value in recorded.items():
        recorded[key] = strip_annotated(value)
    return (
        None if signature is None else strip_annotated(signature),
        None if return_annotation is None else strip_annotated(return_annotation),
    )


def _drop_borrowed_docstring(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """A constant or alias has no docstring of its own, so autodoc shows its *type's*
    (``int``'s, ``typing.Annotated``'s); the page's own sentence is the documentation."""
    if what not in ("data", "attribute") or obj is None or inspect.isclass(obj):
        return
    borrowed = inspect.getdoc(type(obj))
    if borrowed and "\n".join(lines).strip().startswith(borrowed.strip()[:60]):
        own = "\n".join(lines).strip()[len(borrowed.strip()) :].strip()
        lines[:] = own.splitlines()


def _keep_public(
    app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any
) -> bool | None:
    """A package's ``__all__`` is its public surface: document every name in it, data and
    aliases included (autodoc would skip those, having no docstring of their own)."""
    if what == "module" and name in _SHORT_PUBLIC_NAMES:
        documenting = str(app.env.temp_data.get("autodoc:module") or "")
        home = str(getattr(obj, "__module__", "") or "")
        # a class re-exported from another runport package is documented at its home; the
        # re-exporting page names it with a short entry of its own
        return isinstance(obj, type) and _package(home) not in ("", _package(documenting))
    return None


def _package(module: str) -> str:
    """``runport.core`` of ``runport.core._turn``; ``""`` outside runport."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "runport" and len(parts) > 1 else ""


_SHORT_PUBLIC_NAMES: set[str] = set()


def setup(app: Sphinx) -> dict[str, Any]:
    # Import every package before autodoc inspects any: documenting pydantic models first
    # leaves pydantic in a state where a later first import of the mcp SDK's models fails.
    _SHORT_PUBLIC_NAMES.update(name.rsplit(".", 1)[-1] for name in public_names())
    app.connect("autodoc-skip-member", _keep_public)
    # after autodoc's own handler has recorded the types (priority 500)
    app.connect("autodoc-process-signature", _plain_types, priority=900)
    app.connect("autodoc-process-docstring", _drop_borrowed_docstring)
    app.add_directive("error-code-table", ErrorCodeTable)
    app.connect("missing-reference", _resolve_private)
    app.connect("env-check-consistency", _check_public_names)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
