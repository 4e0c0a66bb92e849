"""The one strict reader of JSON and YAML: contracts, scenarios, input files (docs/limits.md).

Every file runport reads is someone else's text, so reading it is bounded: the work is linear
in the document's size, and the value that comes out has a bounded depth, a bounded number of
values (an alias counts each time it is used, so a "billion laughs" file is refused after a
few thousand steps instead of expanded), bounded strings and integers Python can still print.
What comes out is plain JSON data — string keys, finite numbers, Unicode text — so every later
walk (rendering, validation, fingerprints) can trust it.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Final

import yaml
from pydantic import JsonValue
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from runport.contracts import MAX_INT_DIGITS, MAX_JSON_DEPTH, ErrorCode

MAX_DOCUMENT_BYTES: Final = 16 * 1024 * 1024
"""The largest document read, in UTF-8 bytes."""

MAX_DOCUMENT_NODES: Final = 100_000
"""The most values (mapping keys included) one document may hold once its aliases are expanded."""

MAX_SCALAR_BYTES: Final = 1024 * 1024
"""The longest string in a document, in UTF-8 bytes."""

_INT_BOUND: Final = 10**MAX_INT_DIGITS
_YAML_TAGS: Final = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("null", "bool", "int", "float", "str", "seq", "map", "merge")
)


class DocumentError(ValueError):
    """A document that cannot be read as bounded, strict JSON data.

    ``code`` is the code the caller's kind of file reports (``TQX_DATA_INVALID`` unless the
    loader asked for another, as the contract loader asks for ``TQX_PARSE_YAML``);
    ``message`` says what is wrong and where (line and column, or a JSON pointer); ``source``
    is the file, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = ErrorCode.DATA_INVALID.value,
        source: str | None = None,
        pointer: str | None = None,
    ) -> None:
        super().__init__(f"{source}: {message}" if source else message)
        self.message = message
        self.code = str(code)
        self.source = source
        self.pointer = pointer


def load_document(
    path: str | os.PathLike[str], *, code: str = ErrorCode.DATA_INVALID.value
) -> JsonValue:
    """Read a JSON or YAML file (told apart by content) into JSON data, or raise ``DocumentError``.

    A file larger than ``MAX_DOCUMENT_BYTES`` is refused before more than that is read. A file
    that cannot be opened or is not UTF-8 is always ``TQX_DATA_INVALID``: ``code`` is for what
    the text says.
    """
    source = os.fspath(path)
    try:
        with open(source, "rb") as handle:
            raw = handle.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as error:
        reason = error.strerror or str(error)
        raise DocumentError(f"cannot read the file: {reason}", source=source) from None
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise DocumentError(_too_large(), code=code, source=source)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DocumentError(
            f"not UTF-8 text (byte {error.start}: {error.reason})", source=source
        ) from None
    return parse_document(text, source=source, code=code)


def parse_document(
    text: str, *, source: str | None = None, code: str = ErrorCode.DATA_INVALID.value
) -> JsonValue:
    """Decode one JSON or YAML document into JSON data, or raise ``DocumentError``.

    JSON is tried first with JSON's own rules (``2024-01-01`` stays text, ``1e5`` is a number);
    anything that is not JSON is read as YAML 1.1 without timestamps. Both refuse a key twice in
    one mapping, NaN and the infinities, lone surrogates, non-string keys and recursive aliases.
    """

    def fail(message: str, pointer: str | None = None) -> DocumentError:
        return DocumentError(message, code=code, source=source, pointer=pointer)

    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as error:
        raise fail(f"a lone surrogate at character {error.start} is not Unicode text") from None
    if size > MAX_DOCUMENT_BYTES:
        raise fail(_too_large())
    value: JsonValue
    try:
        value = bounded_json(text, strict_keys=True)
    except _Refused as refused:
        raise fail(f"invalid JSON: {refused}") from None
    except JsonLimitError as error:
        raise fail(error.message) from None
    except json.JSONDecodeError as error:
        json_problem = f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        try:
            value = _decode_yaml(text)
        except _Refused as refused:
            raise fail(f"invalid YAML: {refused}") from None
        except yaml.YAMLError as yaml_error:
            if text.lstrip().startswith(("{", "[")):
                raise fail(json_problem) from None  # meant as JSON: its complaint is the useful one
            raise fail(_yaml_message(yaml_error)) from None
    problem = json_value_problem(value)
    if problem is not None:
        pointer, message = problem
        raise fail(f"{message} (at {pointer or '/'})", pointer)
    return value


def json_value_problem(value: object, *, document: bool = True) -> tuple[str, str] | None:
    """``(json_pointer, why)`` where ``value`` first stops being bounded JSON data, else ``None``.

    Iterative, so a value nested far deeper than the bound is refused rather than recursed into.
    Depth, integer size, finite numbers, string keys and Unicode text are always checked: every
    later walk needs them. The node count and string size bound what a *file* may make runport
    hold, so a value built in code (``document=False``) is not held to them.
    """
    max_nodes = MAX_DOCUMENT_NODES if document else math.inf
    max_scalar = MAX_SCALAR_BYTES if document else math.inf
    count = 0
    stack: list[tuple[object, int, _Trail]] = [(value, 0, None)]
    while stack:
        item, depth, trail = stack.pop()
        count += 1
        if count > max_nodes:
            return _pointer(trail), f"more than {MAX_DOCUMENT_NODES:,} values"
        if isinstance(item, str):
            problem = _text_problem(item, max_scalar)
            if problem:
                return _pointer(trail), problem
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if abs(item) >= _INT_BOUND:
                return _pointer(trail), f"an integer with more than {MAX_INT_DIGITS} digits"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return _pointer(trail), "not a finite number (JSON has no NaN or infinity)"
        elif isinstance(item, dict | list):
            if depth >= MAX_JSON_DEPTH:
                return _pointer(trail), f"nested more than {MAX_JSON_DEPTH} levels deep"
            if isinstance(item, list):
                stack.extend((child, depth + 1, (trail, index)) for index, child in enumerate(item))
                continue
            for key, child in item.items():
                if not isinstance(key, str):
                    return _pointer(trail), f"the key {key!r} is not a string (quote it)"
                problem = _text_problem(key, max_scalar)
                if problem:
                    return _pointer(trail), f"a key is {problem}"
                stack.append((child, depth + 1, (trail, key)))
        else:
            return _pointer(trail), f"a {type(item).__name__} is not JSON data"
    return None


# ---- JSON ------------------------------------------------------------------------------------


class _Refused(Exception):
    """Syntax the format allows but runport does not read: never retried as the other format."""


class NotJsonError(_Refused):
    """A constant Python's ``json`` accepts and JSON does not (``NaN``, ``Infinity``)."""


class JsonLimitError(Exception):
    """JSON that is well-formed but past runport's bounds (docs/limits.md): nested deeper than
    ``MAX_JSON_DEPTH`` or holding a number no JSON value here can carry.

    ``code`` is ``TQX_RUNTIME_INVALID_RESPONSE``: met in an upstream's answer or tool arguments
    while a receipt is built, it fails the call with that code; in a document it becomes the
    loader's own ``DocumentError``.
    """

    code: Final = ErrorCode.RUNTIME_INVALID_RESPONSE.value

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Refused(_duplicate(key))
        result[key] = value
    return result


def _constant(name: str) -> Any:
    raise NotJsonError(f"{name} is not JSON")


def _integer(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonLimitError(f"the JSON holds an integer with more than {MAX_INT_DIGITS} digits")
    return int(digits)


def _real(digits: str) -> float:
    number = float(digits)
    if not math.isfinite(number):
        raise JsonLimitError(f"the JSON holds the number {digits[:40]!r}, too large for a float")
    return number


_DECODERS = {
    keys: json.JSONDecoder(
        object_pairs_hook=_pairs if keys else None,
        parse_constant=_constant,
        parse_int=_integer,
        parse_float=_real,
    )
    for keys in (False, True)
}


_NATIVE = {
    keys: json.JSONDecoder(
        object_pairs_hook=_pairs if keys else None,
        parse_constant=_constant,
        parse_float=_real,
    )
    for keys in (False, True)
}
"""``_DECODERS`` with Python's own integers, used while the interpreter's bound on an integer's
digits is ``MAX_INT_DIGITS`` (its default): it then refuses, as a ``ValueError``, exactly the
integers ``_integer`` refuses, and no Python call is made per integer (a tool's arguments of
20,000 integers read in a quarter of the time)."""


def bounded_json(text: str, *, strict_keys: bool = False) -> Any:
    """``json.loads`` within the number and depth bounds.

    Raises ``JsonLimitError`` past them, ``NotJsonError`` for ``NaN``/``Infinity`` and
    ``json.JSONDecodeError`` for what is not JSON; ``strict_keys`` refuses a key twice in one
    object (a document), where an upstream's answer keeps JSON's last-one-wins.
    """
    try:
        if type(text) is str and not text.startswith("\ufeff"):
            if sys.get_int_max_str_digits() == MAX_INT_DIGITS:
                try:
                    return _NATIVE[strict_keys].decode(text)
                except json.JSONDecodeError:
                    raise
                except ValueError:
                    pass  # an integer past the bound: the decoder below says so, coded
            return _DECODERS[strict_keys].decode(text)  # json.loads, with no decoder per call
        return json.loads(
            text,
            object_pairs_hook=_pairs if strict_keys else None,
            parse_constant=_constant,
            parse_int=_integer,
            parse_float=_real,
        )
    except RecursionError:
        raise JsonLimitError(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep") from None


# ---- YAML ------------------------------------------------------------------------------------


class _Bounded(Composer, SafeConstructor, Resolver):
    """A safe YAML loader bounded while it composes, keeping JSON's data model.

    Composing is always PyYAML's, so it can stop past the depth and node bounds before
    recursion or memory run away, and before the graph is checked; scanning and parsing come
    from a subclass. Unquoted dates stay strings, and a key repeated in one mapping is an error
    instead of the last one silently winning.
    """

    peek_event: Callable[[], yaml.Event | None]  # from the parser a subclass brings

    def _start(self) -> None:
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._level = 0
        self._composed = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._level += 1
        self._composed += 1
        try:
            # One level more than the bound: a scalar may sit inside MAX_JSON_DEPTH collections.
            if self._level > MAX_JSON_DEPTH + 1:
                raise _Refused(f"nested more than {MAX_JSON_DEPTH} levels deep{self._here()}")
            if self._composed > MAX_DOCUMENT_NODES:
                raise _Refused(f"more than {MAX_DOCUMENT_NODES:,} values{self._here()}")
            return super().compose_node(parent, index)
        finally:
            self._level -= 1

    def _here(self) -> str:
        event = self.peek_event()
        mark = event.start_mark if event is not None else None
        return f" (at {_mark(mark)})" if mark is not None else ""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # the base constructor refuses unhashable keys itself
            if key in seen:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    _duplicate(key),
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Bounded.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


class PythonYamlLoader(_Bounded, Reader, Scanner, Parser):
    """PyYAML's own scanner and parser: the reader when libyaml is not installed."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        self._start()


YamlLoader: type[PythonYamlLoader] = PythonYamlLoader
if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _LibyamlLoader(_Bounded, CParser):
        """libyaml scans and parses: an explicit stack, never recursing, and several times
        faster than PyYAML's Python scanner."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            self._start()

    YamlLoader = _LibyamlLoader  # type: ignore[assignment]


def _decode_yaml(text: str, loader_class: type[PythonYamlLoader] = YamlLoader) -> Any:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_graph(node)
        try:
            return loader.construct_document(node)
        except (ValueError, TypeError, AttributeError, ArithmeticError) as error:
            raise _Refused(f"a value cannot be read ({error})") from None
    finally:
        loader.dispose()


def _check_graph(root: yaml.Node) -> None:
    """Refuse what construction would expand past the bounds, in time linear in the graph.

    Aliases make the composed document a graph: each node's expanded size and height are worked
    out once and reused wherever an alias points at it, and a node met again while its own
    children are being measured is a recursive alias.
    """
    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        children = _children(node)
        if closing:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(child)] for child in children)
            height = 1 + max((heights[id(child)] for child in children), default=0)
            if size > MAX_DOCUMENT_NODES:
                raise _Refused(
                    f"more than {MAX_DOCUMENT_NODES:,} values once its aliases are expanded "
                    f"(at {_mark(node.start_mark)})"
                )
            if height > MAX_JSON_DEPTH:
                raise _Refused(
                    f"nested more than {MAX_JSON_DEPTH} levels deep once its aliases are expanded "
                    f"(at {_mark(node.start_mark)})"
                )
            sizes[key], heights[key] = size, height
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise _Refused(
                f"a recursive alias makes the document contain itself (at {_mark(node.start_mark)})"
            )
        if node.tag not in _YAML_TAGS:
            raise _Refused(f"the tag {node.tag!r} is not JSON data (at {_mark(node.start_mark)})")
        if isinstance(node, yaml.ScalarNode):
            digits = node.value.lstrip("+-").replace("_", "")
            if node.tag == "tag:yaml.org,2002:int" and len(digits) > MAX_INT_DIGITS:
                raise _Refused(
                    f"an integer with more than {MAX_INT_DIGITS} digits "
                    f"(at {_mark(node.start_mark)})"
                )
            sizes[key], heights[key] = 1, 0
            continue
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _yaml_message(error: yaml.YAMLError) -> str:
    if not isinstance(error, yaml.MarkedYAMLError):
        return f"invalid YAML: {error}"
    message = error.problem or error.context or "invalid YAML"
    if error.problem and error.context:
        started = f" started at {_mark(error.context_mark)}" if error.context_mark else ""
        message = f"{message} ({error.context}{started})"
    mark = error.problem_mark or error.context_mark
    where = f" at {_mark(mark)}" if mark is not None else ""
    return f"invalid YAML{where}: {message}"


def _mark(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


# ---- shared ----------------------------------------------------------------------------------

_Trail = tuple[Any, str | int] | None


def copy_json(value: Any) -> Any:
    """A copy of JSON data sharing no container with ``value``: what ``copy.deepcopy`` gives for
    it, without the memo (JSON data holds no cycles and its scalars are immutable)."""
    if type(value) is dict:
        return {key: copy_json(item) for key, item in value.items()}
    if type(value) is list:
        return [copy_json(item) for item in value]
    return value


def json_pointer(path: Iterable[object]) -> str:
    """RFC 6901 pointer for a sequence of keys and indexes."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _pointer(trail: _Trail) -> str:
    parts: list[str | int] = []
    while trail is not None:
        trail, part = trail
        parts.append(part)
    return json_pointer(reversed(parts))


def _text_problem(text: str, max_scalar: float) -> str | None:
    if text.isascii():
        if len(text) <= max_scalar:
            return None
        size = len(text)
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError as error:
            return f"text with a lone surrogate at character {error.start} (not Unicode)"
    if size > max_scalar:
        return f"a string of {size:,} bytes (the bound is {MAX_SCALAR_BYTES:,})"
    return None


def _duplicate(key: object) -> str:
    return f"key {key!r} appears twice in one mapping"


def _too_large() -> str:
    return f"larger than {MAX_DOCUMENT_BYTES:,} bytes"
