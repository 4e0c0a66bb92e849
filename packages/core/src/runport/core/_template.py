"""Message content written as one string, ``"Plan a trip to {{ inputs.city | trim }}"``
(docs/python-contracts.md).

A string is read at load time into the ``text`` and ``interpolate`` nodes the structured form
spells out, so both forms compile to the same interaction and the same request fingerprint.
It stays data: a placeholder holds one dotted reference under ``inputs`` or ``context`` and a
chain of the known filters; there are no operators, calls or attribute lookups to evaluate.
``{{ "{{" }}`` writes a literal ``{{`` (the same spelling Jinja reads), and ``{%``/``{#`` are
refused rather than passed through, so a Jinja statement is never mistaken for prompt text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runport.contracts import Diagnostic, ErrorCode

FILTERS = ("trim", "lower", "upper", "json")
ROOTS = ("inputs", "context")

_OPENING = re.compile(r"\{[{%#]")
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
_QUOTED = re.compile(r"""\s*(?:"([^"]*)"|'([^']*)')\s*\}\}""")

Relocate = Callable[[list[Diagnostic]], list[Diagnostic]]


def parse_template(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The node data a template string stands for, and why any placeholder was refused.

    A refused placeholder is left out and scanning goes on, so one pass reports every bad
    placeholder; an unclosed ``{{`` ends the scan, since nothing after it has one reading.
    """
    nodes: list[dict[str, Any]] = []
    problems: list[str] = []
    literal: list[str] = []

    def flush() -> None:
        value = "".join(literal)
        literal.clear()
        if value:
            nodes.append({"kind": "text", "value": value})

    position = 0
    while (found := _OPENING.search(text, position)) is not None:
        start = found.start()
        literal.append(text[position:start])
        where = f"at character {start + 1}"
        if found.group() != "{{":
            problems.append(
                f"{found.group()!r} {where}: statements and comments are not template syntax; "
                f'write {{{{ "{found.group()}" }}}} for the literal text'
            )
            position = start + 2
            continue
        quoted = _QUOTED.match(text, start + 2)
        if quoted is not None:
            literal.append(quoted.group(1) if quoted.group(1) is not None else quoted.group(2))
            position = quoted.end()
            continue
        end = text.find("}}", start + 2)
        if end < 0:
            problems.append(
                f"'{{{{' {where} is never closed by '}}}}' "
                "(write {{ \"{{\" }} for a literal '{{')"
            )
            position = len(text)
            break
        inner = text[start + 2 : end]
        position = end + 2
        if "{{" in inner:
            problems.append(
                f"'{{{{' {where} is not closed before the next '{{{{' "
                "(write {{ \"{{\" }} for a literal '{{')"
            )
            continue
        node, problem = _placeholder(inner)
        if problem:
            problems.append(f"{text[start:position]!r} {where}: {problem}")
            continue
        flush()
        nodes.append(node)
    literal.append(text[position:])
    flush()
    return nodes, problems


def _placeholder(inner: str) -> tuple[dict[str, Any], str]:
    ref, *filters = (part.strip() for part in inner.split("|"))
    if not ref:
        return {}, "a placeholder needs a reference such as inputs.<name>"
    if ref[0] in "\"'":
        return {}, "a quoted literal takes no filters and must close with its own quote"
    parts = ref.split(".")
    if parts[0] not in ROOTS or len(parts) < 2:
        return {}, (
            f"{ref!r} is not a reference: write inputs.<name> or context.<name>, "
            "with dotted keys or indexes after it (loop items need the structured form)"
        )
    if not all(_SEGMENT.fullmatch(part) for part in parts[1:]):
        return {}, (
            f"{ref!r} is not a dotted path: each key after {parts[0]!r} is letters, digits, "
            "'_' or '-'"
        )
    for name in filters:
        if name not in FILTERS:
            return {}, f"unknown filter {name!r} (known: {', '.join(FILTERS)})"
    expression = {"kind": "ref", "path": ref}
    return {"kind": "interpolate", "expression": expression, "filters": filters}, ""


def expand_templates(
    data: Mapping[str, Any],
) -> tuple[Mapping[str, Any], list[Diagnostic], Relocate]:
    """``data`` with every template string in message content replaced by its nodes.

    Also returns the templates' own problems (pointing at the strings) and a function that
    moves later diagnostics, which point into the expanded nodes, back onto the document the
    author wrote: a node that came from a string points at that string.
    """
    messages = data.get("messages")
    if not isinstance(messages, list):
        return data, [], _unchanged
    expansion = _Expansion(part_value_kinds(data))
    expanded: list[Any] = []
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str | list):
            at = f"/messages/{index}/content"
            message = {**message, "content": expansion.content(content, at, at)}
        expanded.append(message)
    if not expansion.strings:
        return data, [], _unchanged
    return {**data, "messages": expanded}, expansion.problems, _relocator(expansion.moves)


def part_value_kinds(data: Mapping[str, Any]) -> dict[str, str]:
    """The refs of the values a contract document declares with a part kind, and the kind:
    ``{"inputs.photo": "image"}``."""
    kinds: dict[str, str] = {}
    for root in ROOTS:
        specs = data.get(root)
        if isinstance(specs, Mapping):
            for name, spec in specs.items():
                if isinstance(spec, Mapping) and spec.get("kind") in ("image", "file"):
                    kinds[f"{root}.{name}"] = spec["kind"]
    return kinds


class _Expansion:
    """One contract's expansion: its template problems, and where each expanded node was
    written (``moves``: expanded pointer -> written pointer, and whether it came from a
    string, whose nodes all point at the string). A placeholder that names an image or file
    value, with no filter, stands for the node that places it (``parts``: ref -> kind)."""

    def __init__(self, parts: Mapping[str, str]) -> None:
        self.parts = parts
        self.strings = 0
        self.problems: list[Diagnostic] = []
        self.moves: dict[str, tuple[str, bool]] = {}

    def content(self, content: str | Sequence[Any], written: str, placed: str) -> list[Any]:
        """One content list (or string); ``written``/``placed`` are its pointer in the
        author's document and in the expanded one."""
        if isinstance(content, str):
            return self.template(content, written, placed, 0)
        out: list[Any] = []
        for index, item in enumerate(content):
            source = f"{written}/{index}"
            if isinstance(item, str):
                out.extend(self.template(item, source, placed, len(out)))
                continue
            target = f"{placed}/{len(out)}"
            self.moves[target] = (source, False)
            if isinstance(item, Mapping):
                item = {
                    key: self.content(value, f"{source}/{key}", f"{target}/{key}")
                    if key in ("then", "else", "body") and isinstance(value, list)
                    else value
                    for key, value in item.items()
                }
            out.append(item)
        return out

    def template(self, text: str, written: str, placed: str, first: int) -> list[Any]:
        self.strings += 1
        nodes, reasons = parse_template(text)
        if self.parts:
            nodes = [self._part(node) for node in nodes]
        self.problems.extend(
            Diagnostic(code=ErrorCode.CONTRACT_INVALID, json_pointer=written, message=reason)
            for reason in reasons
        )
        for index in range(first, first + len(nodes)):
            self.moves[f"{placed}/{index}"] = (written, True)
        return nodes

    def _part(self, node: dict[str, Any]) -> dict[str, Any]:
        if node["kind"] != "interpolate" or node["filters"]:
            return node
        source = node["expression"]
        kind = self.parts.get(source["path"])
        return node if kind is None else {"kind": kind, "source": source}


def _unchanged(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    return diagnostics


def _relocator(moves: Mapping[str, tuple[str, bool]]) -> Relocate:
    def relocate_one(diagnostic: Diagnostic) -> Diagnostic:
        pointer = diagnostic.json_pointer
        if not pointer:
            return diagnostic
        parts = pointer.split("/")
        for length in range(len(parts), 1, -1):
            prefix = "/".join(parts[:length])
            if prefix in moves:
                written, collapse = moves[prefix]
                moved = written if collapse else written + pointer[len(prefix) :]
                return diagnostic.model_copy(update={"json_pointer": moved})
        return diagnostic

    def relocate(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        return [relocate_one(diagnostic) for diagnostic in diagnostics]

    return relocate
