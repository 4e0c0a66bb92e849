"""Contracts written in Python: types in, a plain ``runport.core.Contract`` out
(docs/python-contracts.md, adr/0017-template-strings-and-python-contracts.md).

Nothing here is a second contract model: the types are turned into the JSON Schemas a YAML
author would write, the pieces into the same document, and that document goes through
``parse_contract``, so a Python contract is checked, compiled and fingerprinted exactly like
its YAML twin and every surface that takes a ``Contract`` takes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from pydantic import JsonValue, TypeAdapter

from runport.application._tools import Tool, as_tool
from runport.contracts import FilePart, ImagePart, canonical_json
from runport.core import Contract, is_text_schema, parse_contract

T = TypeVar("T")

Role = Literal["system", "developer", "user", "assistant", "tool"]
Content = str | Sequence[Mapping[str, Any] | str]
ValueTypes = type[Any] | Mapping[str, Any]


def define_contract(
    id: str,
    *,
    system: Content | None = None,
    user: Content | None = None,
    messages: Sequence[tuple[Role, Content]] = (),
    inputs: ValueTypes | None = None,
    context: ValueTypes | None = None,
    output: Any = str,
    tools: Sequence[Tool | Callable[..., Any]] = (),
    version: str = "1.0.0",
    description: str = "",
    capabilities: Sequence[str] | None = None,
    runtime_policy: Mapping[str, JsonValue] | None = None,
) -> Contract:
    """A contract from Python types, with its messages as template strings.

    ``system``/``user`` are the common two-message shape; ``messages`` takes ``(role, content)``
    pairs for anything else (not both). ``inputs`` and ``context`` are a class whose JSON Schema
    is an object (a pydantic model, dataclass or ``TypedDict``: its required fields are the
    required values) or a mapping of name to type (every one required). ``output`` is the type
    the answer must have: ``str`` for text, else its JSON Schema is the output schema. Unless
    given, ``capabilities`` are ``text`` or ``structured_output``, plus ``tool_calls`` when
    ``tools`` are listed. Raises ``ContractError`` on anything ``parse_contract`` refuses.
    """
    if messages and (system is not None or user is not None):
        raise TypeError("give messages, or system/user, not both")
    pairs: list[tuple[Role, Content]] = list(messages)
    if system is not None:
        pairs.append(("system", system))
    if user is not None:
        pairs.append(("user", user))
    output_schema = TypeAdapter(output).json_schema()
    offered = [as_tool(tool).spec().model_dump(mode="json") for tool in tools]
    if capabilities is None:
        kind = "text" if is_text_schema(output_schema) else "structured_output"
        capabilities = sorted({kind, *(["tool_calls"] if offered else [])})
    document: dict[str, Any] = {
        "api_version": "runport/v1alpha1",
        "id": id,
        "version": version,
        "description": description,
        "inputs": _value_specs(inputs),
        "context": _value_specs(context),
        "capabilities": list(capabilities),
        "messages": [{"role": role, "content": _content(content)} for role, content in pairs],
        "output_schema": output_schema,
        "runtime_policy": dict(runtime_policy or {}),
        "tools": offered,
    }
    return parse_contract(document, source=f"contract {id!r}")


def _content(content: Content) -> str | list[Any]:
    return content if isinstance(content, str) else [_plain(item) for item in content]


def _plain(item: Mapping[str, Any] | str) -> Any:
    return item if isinstance(item, str) else dict(item)


def _part_kind(annotation: Any) -> str | None:
    """``image`` for ``ImagePart`` (or ``ImagePart | None``), ``file`` for ``FilePart``."""
    members = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else ()
    found = [each for each in members or (annotation,) if each is not type(None)]
    if found == [ImagePart]:
        return "image"
    if found == [FilePart]:
        return "file"
    return None


def _value_specs(types: ValueTypes | None) -> dict[str, dict[str, Any]]:
    """The ``inputs``/``context`` block a YAML author would write for these types; a value
    typed ``ImagePart`` or ``FilePart`` is declared with that kind."""
    if types is None:
        return {}
    if isinstance(types, Mapping):
        return {
            name: {"kind": kind, "required": True}
            if (kind := _part_kind(annotation))
            else {"schema": TypeAdapter(annotation).json_schema(), "required": True}
            for name, annotation in types.items()
        }
    hints = get_type_hints(types) if isinstance(types, type) else {}
    parts = {name: kind for name, hint in hints.items() if (kind := _part_kind(hint))}
    schema = TypeAdapter(types).json_schema()
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        raise TypeError(
            f"{types!r} has no named fields: give a pydantic model, dataclass or TypedDict, "
            "or a mapping of name to type"
        )
    definitions = schema.get("$defs")
    required = set(schema.get("required", []))
    specs: dict[str, dict[str, Any]] = {}
    for name, field_schema in properties.items():
        # A field that names a nested model refers into the whole schema's $defs.
        own = {**field_schema, "$defs": definitions} if definitions else field_schema
        spec: dict[str, Any] = {"kind": parts[name]} if name in parts else {"schema": own}
        specs[name] = {
            **spec,
            "required": name in required,
            "description": field_schema.get("description", ""),
        }
    return specs


def output_as(output: JsonValue, kind: type[T]) -> T:
    """``output`` (JSON data, as receipts and runs carry it) validated into ``kind``.

    Validated in JSON mode, so a value reads as it would from the model's own text: a
    ``datetime`` field takes an ISO string, a ``tuple`` field an array.
    """
    return TypeAdapter(kind).validate_json(canonical_json(output))
