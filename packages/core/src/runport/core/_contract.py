"""The contract model, and loading it from YAML with every problem reported at once
(docs/contracts.md)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal, TypeGuard

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
    model_validator,
)

from runport.contracts import Diagnostic, ErrorCode, ToolSpec
from runport.core._document import (
    DocumentError,
    json_pointer,
    json_value_problem,
    load_document,
)
from runport.core._part_values import PartKind, part_value_schema
from runport.core._policy_keys import runtime_policy_warnings
from runport.core._schema import schema_problems, validate_output
from runport.core._template import expand_templates, part_value_kinds

# semver.org's own regular expression, so "1.0" and "01.2.3" are refused as they are there.
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_ROOTS = ("inputs", "context")
_API_VERSIONS = ("runport/v1alpha1", "templiqx/v1alpha1")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, serialize_by_alias=True)


def _is_none(value: object) -> bool:
    return value is None


# Expressions ----------------------------------------------------------------------------------


class RefExpr(_Model):
    """A dotted path: ``inputs.<name>…``, ``context.<name>…`` or a ``for_each`` item name."""

    kind: Literal["ref"] = "ref"
    path: Annotated[str, Field(min_length=1)]


class LiteralExpr(_Model):
    kind: Literal["literal"] = "literal"
    value: JsonValue = None


class EqualsExpr(_Model):
    kind: Literal["equals"] = "equals"
    left: Expression
    right: Expression


class NotExpr(_Model):
    # templiqx spells the operand ``value``; both spellings load so its files read unchanged.
    kind: Literal["not"] = "not"
    expr: Expression = Field(validation_alias=AliasChoices("expr", "value"))


class AndExpr(_Model):
    kind: Literal["and"] = "and"
    exprs: Annotated[
        list[Expression], Field(min_length=1, validation_alias=AliasChoices("exprs", "values"))
    ]


class OrExpr(_Model):
    kind: Literal["or"] = "or"
    exprs: Annotated[
        list[Expression], Field(min_length=1, validation_alias=AliasChoices("exprs", "values"))
    ]


Expression = Annotated[
    RefExpr | LiteralExpr | EqualsExpr | NotExpr | AndExpr | OrExpr,
    Field(discriminator="kind"),
]

# Content nodes --------------------------------------------------------------------------------

Filter = Literal["trim", "lower", "upper", "json"]


def _is_false(value: object) -> bool:
    return value is False


class _Breakpoint(_Model):
    """A prompt-cache breakpoint (adr/0051-cache-tokens-and-cache-breakpoints.md): on a message,
    after the whole message; on a node directly in a message's content, after what the node
    renders, which then ends a part of its own. Both fields are left out of the contract's
    bytes when not set, so a contract without a breakpoint keeps its fingerprint."""

    cache: bool = Field(default=False, exclude_if=_is_false)
    """A prompt-cache breakpoint after this message or node."""
    cache_ttl: Literal["5m", "1h"] | None = Field(default=None, exclude_if=_is_none)
    """How long the breakpoint's cache entry lives, where the provider lets a request say;
    only with ``cache: true``."""

    @model_validator(mode="after")
    def _ttl_needs_a_breakpoint(self) -> Any:
        if self.cache_ttl is not None and not self.cache:
            raise ValueError("cache_ttl needs cache: true")
        return self


class TextNode(_Breakpoint):
    kind: Literal["text"] = "text"
    value: str


class InterpolateNode(_Breakpoint):
    kind: Literal["interpolate"] = "interpolate"
    expression: Expression
    filters: list[Filter] = Field(default_factory=list)


class WhenNode(_Breakpoint):
    kind: Literal["when"] = "when"
    condition: Expression
    then: list[Node]
    otherwise: list[Node] = Field(default_factory=list, alias="else")


class ForEachNode(_Breakpoint):
    kind: Literal["for_each"] = "for_each"
    collection: Expression
    # An identifier, and never a root name, so a ref path has exactly one reading.
    item: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    body: list[Node]
    separator: str = ""

    @field_validator("item")
    @classmethod
    def _not_a_root(cls, value: str) -> str:
        if value in _ROOTS:
            raise ValueError(f"item name {value!r} would hide the {value!r} root")
        return value


class ImageNode(_Breakpoint):
    """The image an input (or context value) of kind ``image`` holds, as a part of its own
    between the message's texts; nothing when the value was not given."""

    kind: Literal["image"] = "image"
    source: RefExpr


class FileNode(_Breakpoint):
    """The file an input (or context value) of kind ``file`` holds, as a part of its own."""

    kind: Literal["file"] = "file"
    source: RefExpr


PartNode = ImageNode | FileNode

Node = Annotated[
    TextNode | InterpolateNode | WhenNode | ForEachNode | ImageNode | FileNode,
    Field(discriminator="kind"),
]

for _model in (EqualsExpr, NotExpr, AndExpr, OrExpr, WhenNode, ForEachNode):
    _model.model_rebuild()

# The contract ---------------------------------------------------------------------------------


class ValueSpec(_Model):
    # ``schema`` would shadow a BaseModel attribute; the YAML key stays ``schema``.
    json_schema: dict[str, JsonValue] = Field(alias="schema")
    required: bool = False
    description: str = ""
    kind: PartKind | None = Field(default=None, exclude_if=_is_none)
    """For a value that is a message part's source, ``image`` or ``file`` (docs/contracts.md),
    placed by an ``image``/``file`` node; its schema is runport's own and is not written."""

    @model_validator(mode="before")
    @classmethod
    def _part_schema(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or data.get("kind") not in ("image", "file"):
            return data
        own = part_value_schema(data["kind"])
        if "schema" in data and data["schema"] != own:
            raise ValueError(
                f"an input of kind {data['kind']!r} takes runport's own schema: leave 'schema' out"
            )
        return {**data, "schema": own}


class MessageTemplate(_Breakpoint):
    """A message: its role and its content nodes; ``cache: true`` is a prompt-cache breakpoint
    after the whole message."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: list[Node]


class Eval(_Model):
    id: Annotated[str, Field(min_length=1)]
    inputs: dict[str, JsonValue] = Field(default_factory=dict)
    context: dict[str, JsonValue] = Field(default_factory=dict)
    fake_output: JsonValue = None


class Contract(_Model):
    """A prompt contract as written in YAML.

    Built through :func:`parse_contract` (or :func:`load_contract`), a contract has also passed
    the checks that span fields: schemas are valid, refs name declared values, tool names are
    unique and every eval's ``fake_output`` satisfies ``output_schema``.
    """

    api_version: Literal["runport/v1alpha1", "templiqx/v1alpha1"]
    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$")]
    version: str
    description: str = ""
    inputs: dict[str, ValueSpec] = Field(default_factory=dict)
    context: dict[str, ValueSpec] = Field(default_factory=dict)
    capabilities: list[str] = Field(default_factory=list)
    messages: Annotated[list[MessageTemplate], Field(min_length=1)]
    output_schema: dict[str, JsonValue]
    runtime_policy: dict[str, JsonValue] = Field(default_factory=dict)
    tools: list[ToolSpec] = Field(default_factory=list)
    extensions: dict[str, JsonValue] = Field(default_factory=dict)
    components: dict[str, JsonValue] = Field(default_factory=dict)
    provenance: dict[str, JsonValue] = Field(default_factory=dict)
    evals: list[Eval] = Field(default_factory=list)

    @field_validator("api_version", mode="before")
    @classmethod
    def _known_format(cls, value: object) -> object:
        if value not in _API_VERSIONS:
            raise ValueError(
                f"api_version {value!r} is not a contract format runport reads: write "
                "'runport/v1alpha1' (files written for templiqx, with 'templiqx/v1alpha1', "
                "are also read unchanged)"
            )
        return value

    @field_validator("id")
    @classmethod
    def _path_safe(cls, value: str) -> str:
        # The id is a URL path segment (docs/server.md): "." and ".." are removed from a path
        # by every client before it is sent, so such a contract could never be reached.
        if value in (".", ".."):
            raise ValueError(
                f"id {value!r} cannot be a URL path segment (clients remove '.' and '..' from "
                "paths); use letters or digits too"
            )
        return value

    @field_validator("version")
    @classmethod
    def _semver(cls, value: str) -> str:
        if not _SEMVER.match(value):
            raise ValueError(f"version {value!r} is not a semantic version (MAJOR.MINOR.PATCH)")
        return value


# Errors ---------------------------------------------------------------------------------------


class ContractError(Exception):
    """A contract (or the values given to compile it) was refused; ``diagnostics`` lists all
    problems so an author fixes them in one pass."""

    def __init__(self, diagnostics: Sequence[Diagnostic], *, source: str | None = None) -> None:
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        self.source = source
        super().__init__(self._summary())

    def _summary(self) -> str:
        where = self.source if self.source is not None else "contract"
        count = len(self.diagnostics)
        if not count:
            return f"{where}: refused"
        first = self.diagnostics[0]
        at = f" at {first.json_pointer or '/'}" if first.json_pointer is not None else ""
        message = " ".join(first.message.split())
        plural = "problem" if count == 1 else "problems"
        return f"{where}: {count} {plural}; first: {first.code}{at}: {message}"


def _problem(code: ErrorCode, pointer: str | None, message: str) -> Diagnostic:
    return Diagnostic(code=code, json_pointer=pointer, message=message)


# Loading --------------------------------------------------------------------------------------


def load_contract(path: str | os.PathLike[str]) -> Contract:
    """Read a contract file (YAML, or JSON) through the bounded document reader."""
    source = os.fspath(path)
    try:
        data = load_document(source, code=ErrorCode.PARSE_YAML)
    except DocumentError as error:
        diagnostic = _problem(ErrorCode(error.code), error.pointer, error.message)
        raise ContractError([diagnostic], source=source) from error
    return parse_contract(data, source=source)


def parse_contract(data: object, *, source: str | None = None) -> Contract:
    """Validate parsed YAML/JSON into a :class:`Contract`.

    A ``runtime_policy`` key no adapter here reads is a :class:`RuntimePolicyWarning`, not an
    error. Field errors and the cross-field checks are collected together: a part the model refuses
    is skipped by the cross-field checks, every other part is still checked, so one
    ``ContractError`` lists everything that is wrong.
    """
    if not isinstance(data, Mapping):
        kind = "nothing" if data is None else type(data).__name__
        raise ContractError(
            [_problem(ErrorCode.CONTRACT_INVALID, "", f"a contract must be a mapping, not {kind}")],
            source=source,
        )
    refused = json_value_problem(data, document=False)
    if refused is not None:
        # Nothing else is checked: every later check walks the data and relies on its bounds.
        pointer, message = refused
        raise ContractError([_problem(ErrorCode.CONTRACT_INVALID, pointer, message)], source=source)
    # Template strings become the nodes they stand for before anything else looks at them.
    data, template_problems, relocate = expand_templates(data)
    diagnostics: list[Diagnostic] = []
    contract: Contract | None = None
    try:
        contract = Contract.model_validate(data)
    except ValidationError as error:
        diagnostics.extend(_validation_problems(error, data))
    diagnostics.extend(_cross_field_problems(data))
    if template_problems or diagnostics or contract is None:
        raise ContractError(template_problems + relocate(diagnostics), source=source)
    runtime_policy_warnings(contract.runtime_policy, source=source)
    return contract


def _validation_problems(error: ValidationError, data: object) -> list[Diagnostic]:
    return [
        _problem(ErrorCode.CONTRACT_INVALID, *_locate(detail["loc"], detail, data))
        for detail in error.errors(include_url=False)
    ]


def _child(node: object, part: int | str) -> tuple[bool, object]:
    if isinstance(node, Mapping) and part in node:
        return True, node[part]
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return True, node[part]
    return False, None


def _locate(loc: tuple[int | str, ...], detail: Any, data: object) -> tuple[str, str]:
    """The RFC 6901 pointer and message for one pydantic error.

    Pydantic's ``loc`` also names union members (a node's ``kind``, ``dict`` inside a JSON
    value); those are not in the document, so the pointer follows the data, not the ``loc``.
    """
    path: list[int | str] = []
    node = data
    for index, part in enumerate(loc):
        found, child = _child(node, part)
        if found:
            node = child
        elif not (index == len(loc) - 1 and detail["type"] == "missing"):
            continue
        path.append(part)
    pointer = json_pointer(path)
    kind = detail["type"]
    if kind == "extra_forbidden":
        return pointer, f"unknown field {str(loc[-1])!r}"
    if kind == "missing":
        return pointer, f"missing required field {str(loc[-1])!r}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        context = detail.get("ctx") or {}
        expected = context.get("expected_tags", "")
        tag = context.get("tag")
        what = f"unknown kind {tag!r}" if tag is not None else "missing or invalid 'kind'"
        return pointer, f"{what}; expected one of {expected}"
    message = str(detail["msg"])
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return pointer, message


# Checks that span fields ----------------------------------------------------------------------


def is_json(value: object) -> bool:
    """Whether ``value`` is bounded JSON data: what templates, schemas and fingerprints expect."""
    if type(value) is str and value.isascii():
        return True  # the common input: nothing in it to check
    return json_value_problem(value, document=False) is None


def _schema_checkable(value: object) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict) and is_json(value)


def _cross_field_problems(data: Mapping[Any, Any]) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    output_schema = data.get("output_schema")
    output_schema_ok = False
    if _schema_checkable(output_schema):
        reasons = schema_problems(output_schema)
        output_schema_ok = not reasons
        problems.extend(
            _problem(ErrorCode.OUTPUT_SCHEMA_INVALID, "/output_schema", f"invalid schema: {reason}")
            for reason in reasons
        )
    declared: dict[str, set[str]] = {}
    for root in _ROOTS:
        specs = data.get(root)
        declared[root] = set()
        if not isinstance(specs, Mapping):
            continue
        for name, spec in specs.items():
            if isinstance(name, str):
                declared[root].add(name)
            if isinstance(spec, Mapping) and _schema_checkable(spec.get("schema")):
                pointer = json_pointer([root, name, "schema"])
                problems.extend(
                    _problem(ErrorCode.CONTRACT_INVALID, pointer, f"invalid schema: {reason}")
                    for reason in schema_problems(spec["schema"])
                )
    problems.extend(_tool_problems(data.get("tools")))
    names = _Names(declared, part_value_kinds(data))
    problems.extend(_ref_problems(data.get("messages"), names))
    problems.extend(_eval_problems(data.get("evals"), output_schema if output_schema_ok else None))
    return problems


def _mappings(items: object) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The members of a list that are mappings, with their indexes (whatever else is there,
    the contract model refuses)."""
    if isinstance(items, list):
        for index, item in enumerate(items):
            if isinstance(item, Mapping):
                yield index, item


class _Unique:
    """Tells of a list member whose ``key`` repeats an earlier member's."""

    def __init__(self, root: str, key: str, what: str) -> None:
        self._root, self._key, self._what = root, key, what
        self._first_at: dict[str, int] = {}

    def check(self, index: int, member: Mapping[str, Any]) -> Iterator[Diagnostic]:
        value = member.get(self._key)
        if not isinstance(value, str):
            return
        first = self._first_at.setdefault(value, index)
        if first != index:
            yield _problem(
                ErrorCode.CONTRACT_INVALID,
                f"/{self._root}/{index}/{self._key}",
                f"duplicate {self._what} {value!r} (first at /{self._root}/{first})",
            )


def _tool_problems(tools: object) -> Iterator[Diagnostic]:
    names = _Unique("tools", "name", "tool name")
    for index, tool in _mappings(tools):
        parameters = tool.get("parameters")
        if _schema_checkable(parameters):
            for reason in schema_problems(parameters):
                yield _problem(
                    ErrorCode.CONTRACT_INVALID,
                    f"/tools/{index}/parameters",
                    f"invalid schema: {reason}",
                )
        yield from names.check(index, tool)


def _eval_problems(evals: object, output_schema: object) -> Iterator[Diagnostic]:
    ids = _Unique("evals", "id", "eval id")
    for index, item in _mappings(evals):
        yield from ids.check(index, item)
        # An eval without fake_output has nothing to check; an explicit null is checked.
        if isinstance(output_schema, dict) and "fake_output" in item:
            fake = item["fake_output"]
            if not is_json(fake):
                continue
            for problem in validate_output(output_schema, fake):
                yield problem.model_copy(
                    update={
                        "json_pointer": f"/evals/{index}/fake_output{problem.json_pointer or ''}",
                        "message": f"fake_output does not satisfy output_schema: {problem.message}",
                    }
                )


class _Names:
    """What a ref may name: the declared values of each root, and which of them are parts
    (``"inputs.photo"`` → ``"image"``)."""

    def __init__(self, declared: Mapping[str, set[str]], kinds: Mapping[str, str]) -> None:
        self.declared = declared
        self.kinds = kinds

    def part_kind(self, expr: Expression) -> str | None:
        """The kind of the part value a ref reads (or reads into), if it reads one."""
        if not isinstance(expr, RefExpr):
            return None
        return self.kinds.get(".".join(expr.path.split(".")[:2]))


def _ref_problems(messages: object, names: _Names) -> Iterator[Diagnostic]:
    if not isinstance(messages, list):
        return
    for index, raw in enumerate(messages):
        try:
            message = MessageTemplate.model_validate(raw)
        except ValidationError:
            continue  # already reported by the model
        yield from _node_refs(
            message.content, raw["content"], f"/messages/{index}/content", (), names, top=True
        )


def _node_refs(
    nodes: Sequence[Node],
    raws: Sequence[Any],
    pointer: str,
    items: tuple[str, ...],
    names: _Names,
    *,
    top: bool = False,
) -> Iterator[Diagnostic]:
    declared = names.declared
    for index, (node, raw) in enumerate(zip(nodes, raws, strict=True)):
        at = f"{pointer}/{index}"
        if node.cache and not top:
            yield _problem(
                ErrorCode.CONTRACT_INVALID,
                f"{at}/cache",
                "a cache breakpoint sits on a message or on a node directly in its content, "
                "not inside when or for_each (it would mark a place that moves with the values)",
            )
        if isinstance(node, ImageNode | FileNode):
            yield from _part_node_problems(node, at, names, top=top)
        elif isinstance(node, InterpolateNode):
            yield from _part_as_text(node.expression, f"{at}/expression", names)
            yield from _expr_refs(
                node.expression, raw["expression"], f"{at}/expression", items, declared
            )
        elif isinstance(node, WhenNode):
            yield from _expr_refs(
                node.condition, raw["condition"], f"{at}/condition", items, declared
            )
            yield from _node_refs(node.then, raw["then"], f"{at}/then", items, names)
            yield from _node_refs(node.otherwise, raw.get("else", []), f"{at}/else", items, names)
        elif isinstance(node, ForEachNode):
            yield from _part_as_text(node.collection, f"{at}/collection", names)
            yield from _expr_refs(
                node.collection, raw["collection"], f"{at}/collection", items, declared
            )
            yield from _node_refs(node.body, raw["body"], f"{at}/body", (*items, node.item), names)


def out_of_place(node: ImageNode | FileNode) -> str:
    return (
        f"a node of kind {node.kind!r} sits directly in a message's content, not inside when "
        "or for_each (an optional value that was not given places nothing)"
    )


def _part_node_problems(
    node: ImageNode | FileNode, at: str, names: _Names, *, top: bool
) -> Iterator[Diagnostic]:
    if not top:
        yield _problem(
            ErrorCode.CONTRACT_INVALID,
            at,
            out_of_place(node),
        )
        return
    path = node.source.path
    kind = names.kinds.get(path)
    if kind == node.kind:
        return
    root, _, name = path.partition(".")
    if root in _ROOTS and name in names.declared[root]:
        what = f"of kind {kind!r}" if kind else "a JSON value (no kind)"
        reason = (
            f"{path!r} is {what}; a node of kind {node.kind!r} places a value of kind {node.kind!r}"
        )
    else:
        reason = (
            f"the source of a node of kind {node.kind!r} is inputs.<name> or context.<name> "
            f"of a value declared with kind: {node.kind}, not {path!r}"
        )
    yield _problem(ErrorCode.CONTRACT_INVALID, f"{at}/source/path", reason)


def _part_as_text(expr: Expression, pointer: str, names: _Names) -> Iterator[Diagnostic]:
    kind = names.part_kind(expr)
    if kind is None:
        return
    assert isinstance(expr, RefExpr)
    source = ".".join(expr.path.split(".")[:2])
    yield _problem(
        ErrorCode.CONTRACT_INVALID,
        f"{pointer}/path",
        f"{source} is of kind {kind!r}, not text: place it with "
        f"{{kind: {kind}, source: {{kind: ref, path: {source}}}}}",
    )


def _expr_refs(
    expr: Expression,
    raw: Any,
    pointer: str,
    items: tuple[str, ...],
    declared: Mapping[str, set[str]],
) -> Iterator[Diagnostic]:
    if isinstance(expr, RefExpr):
        reason = _ref_problem(expr.path, items, declared)
        if reason:
            yield _problem(ErrorCode.CONTRACT_INVALID, f"{pointer}/path", reason)
    elif isinstance(expr, EqualsExpr):
        yield from _expr_refs(expr.left, raw["left"], f"{pointer}/left", items, declared)
        yield from _expr_refs(expr.right, raw["right"], f"{pointer}/right", items, declared)
    elif isinstance(expr, NotExpr):
        key = "expr" if "expr" in raw else "value"
        yield from _expr_refs(expr.expr, raw[key], f"{pointer}/{key}", items, declared)
    elif isinstance(expr, AndExpr | OrExpr):
        key = "exprs" if "exprs" in raw else "values"
        for index, (operand, raw_operand) in enumerate(zip(expr.exprs, raw[key], strict=True)):
            yield from _expr_refs(operand, raw_operand, f"{pointer}/{key}/{index}", items, declared)


def _ref_problem(path: str, items: tuple[str, ...], declared: Mapping[str, set[str]]) -> str:
    parts = path.split(".")
    if any(not part for part in parts):
        return f"reference {path!r} has an empty segment"
    root = parts[0]
    if root in items:
        return ""
    if root in _ROOTS:
        if len(parts) < 2:
            return f"reference {path!r} must name a value: '{root}.<name>'"
        if parts[1] not in declared[root]:
            known = ", ".join(sorted(declared[root])) or "none"
            noun = "input" if root == "inputs" else "context value"
            return f"reference {path!r} names no declared {noun} (declared: {known})"
        return ""
    in_scope = ", ".join(items) or "none"
    return (
        f"reference {path!r} must start with 'inputs.', 'context.' or a for_each item in scope "
        f"(items in scope: {in_scope})"
    )
