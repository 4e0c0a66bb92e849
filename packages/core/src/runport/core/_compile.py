"""Compiling a contract with its values into a provider-neutral interaction (docs/contracts.md)."""

from __future__ import annotations

import importlib.metadata
import marshal
from collections.abc import Mapping, Sequence
from typing import Any

from runport.contracts import (
    MAX_PART_BYTES,
    CompiledInteraction,
    ContentPart,
    Diagnostic,
    ErrorCode,
    FilePart,
    ImagePart,
    Message,
)
from runport.core._contract import (
    Contract,
    ContractError,
    FileNode,
    ImageNode,
    MessageTemplate,
    TextNode,
    ValueSpec,
    is_json,
)
from runport.core._document import copy_json, json_pointer
from runport.core._held import HeldCache
from runport.core._part_values import PartKind, bind_part, parts_too_large
from runport.core._render import Scope, render_content, render_nodes
from runport.core._render_plan import Rendered, planned_template
from runport.core._schema import schema_errors


def _compiler_version() -> str:
    try:
        return importlib.metadata.version("runport-core")
    except importlib.metadata.PackageNotFoundError:
        return "0.1.0"


COMPILER = f"runport-core/{_compiler_version()}"


def compile_contract(
    contract: Contract,
    *,
    inputs: Mapping[str, Any],
    context: Mapping[str, Any] | None = None,
    target_capabilities: Sequence[str] | None = None,
) -> CompiledInteraction:
    """Check ``inputs`` and ``context`` against their declarations, render every message and
    return the interaction.

    Pure and deterministic: the same contract and values give an equal interaction, and on any
    problem nothing is returned, only one ``ContractError`` listing every problem found.
    """
    problems = _value_problems("inputs", contract.inputs, inputs)
    problems += _value_problems("context", contract.context, {} if context is None else context)
    if problems:
        raise ContractError(problems)

    plan = _plan(contract)
    bound: dict[str, ContentPart] = {}
    if plan.part_values:
        bound = _bind_parts(plan.part_values, inputs, {} if context is None else context)
    scope: Scope | None = None
    errors: list[Diagnostic] = []
    messages: list[Message] = []
    for index, template in enumerate(contract.messages):
        made = plan.made[index]
        if type(made) is Message:
            messages.append(made)
            continue
        if made is not None:
            content = made(inputs, {} if context is None else context)  # type: ignore[operator]
        else:
            if scope is None:
                scope = Scope(dict(inputs), dict(context or {}))
            pointer = f"/messages/{index}/content"
            if index in plan.with_parts:
                content = render_content(template.content, scope, pointer, errors, bound.get)
            else:
                content = render_nodes(template.content, scope, pointer, errors)
        messages.append(Message(role=template.role, content=content, **_breakpoint(template)))
    if errors:
        raise ContractError(errors)
    if target_capabilities:
        return _interaction(contract, messages, target_capabilities)
    frame = plan.frame
    if frame is None:
        frame = plan.frame = _Frame(_interaction(contract, [], None))
    return frame.interaction(messages)


def _interaction(
    contract: Contract, messages: list[Message], target_capabilities: Sequence[str] | None
) -> CompiledInteraction:
    # validation copies the contract's containers: the interaction shares none with it
    return CompiledInteraction(
        compiler=COMPILER,
        contract_id=contract.id,
        contract_version=contract.version,
        messages=messages,
        output_schema=contract.output_schema,
        required_capabilities=list(contract.capabilities),
        target_capabilities=list(target_capabilities or []),
        runtime_policy=contract.runtime_policy,
        extensions=contract.extensions,
        tools=list(contract.tools) or None,
    )


class _Frame:
    """An interaction validated once from the contract, with no messages, and its containers
    (schema, policy, capabilities…) as one ``marshal`` image: loading it gives fresh copies of
    them all in one C call, so no two interactions share a container."""

    __slots__ = ("image", "loose", "validated")

    def __init__(self, validated: CompiledInteraction) -> None:
        self.validated = validated
        packed: dict[str, Any] = {}
        self.loose: list[str] = []
        for name, value in validated.__dict__.items():
            if name != "messages" and (type(value) is dict or type(value) is list):
                try:
                    marshal.dumps(value, 2)
                except ValueError:  # models inside (tools): copied by copy_json
                    self.loose.append(name)
                else:
                    packed[name] = value
        self.image = marshal.dumps(packed, 2)

    def interaction(self, messages: list[Message]) -> CompiledInteraction:
        """The frame with ``messages``: every other field is the validated frame's, copied,
        and each message was validated as it was made."""
        update: dict[str, Any] = marshal.loads(self.image)
        for name in self.loose:
            update[name] = copy_json(getattr(self.validated, name))
        update["messages"] = messages
        return self.validated.model_copy(update=update)


class _Plan:
    """What compiling a contract makes the same way every time: for each template its message
    (text only), or its rendering function (``planned_template``), or ``None`` (rendered by
    ``render_nodes``, or ``render_content`` for the templates in ``with_parts``: those with an
    image or file node, or a node that is a cache breakpoint); the values
    of kind image or file; and the interaction's frame (every field but the messages)."""

    __slots__ = ("frame", "made", "part_values", "with_parts")

    def __init__(self, contract: Contract) -> None:
        self.with_parts = frozenset(
            index
            for index, template in enumerate(contract.messages)
            if any(
                isinstance(node, ImageNode | FileNode) or node.cache for node in template.content
            )
        )
        self.made = tuple(
            None if index in self.with_parts else _made(template)
            for index, template in enumerate(contract.messages)
        )
        self.part_values = tuple(
            (root, name, spec.kind)
            for root, specs in (("inputs", contract.inputs), ("context", contract.context))
            for name, spec in specs.items()
            if spec.kind is not None
        )
        self.frame: _Frame | None = None


_PLANS: HeldCache[_Plan] = HeldCache()


def _plan(contract: Contract) -> _Plan:
    found = _PLANS.get(contract)
    if found is None:
        found = _PLANS.put(contract, _Plan(contract))
    return found


def _bind_parts(
    part_values: tuple[tuple[str, str, PartKind], ...],
    inputs: Mapping[str, Any],
    context: Mapping[str, Any],
) -> dict[str, ContentPart]:
    """Each given image or file value as its part, keyed by the ref that names it
    (``"inputs.photo"``); every refusal, and parts past ``MAX_PART_BYTES`` together, raised as
    one ``ContractError``."""
    roots = {"inputs": inputs, "context": context}
    bound: dict[str, ContentPart] = {}
    problems: list[Diagnostic] = []
    total = 0
    for root, name, kind in part_values:
        value = roots[root].get(name)
        if value is None:
            continue
        noun = "input" if root == "inputs" else "context value"
        pointer = json_pointer([root, name])
        part, refused = bind_part(kind, value, pointer, f"{noun} {name!r}")
        problems.extend(refused)
        if isinstance(part, ImagePart | FilePart):
            bound[f"{root}.{name}"] = part
            total += part.size
            if total > MAX_PART_BYTES >= total - part.size:
                problems.append(parts_too_large(pointer, total))
    if problems:
        raise ContractError(problems)
    return bound


def _breakpoint(template: MessageTemplate) -> dict[str, Any]:
    """A message's cache breakpoint, only when the contract asks for one (ADR 0051)."""
    if not template.cache:
        return {}
    return {"cache": True, "cache_ttl": template.cache_ttl}


def _made(template: MessageTemplate) -> Message | Rendered | None:
    """A template built in code that is not valid is left to ``render_nodes`` and the
    validation of its message, which report it as they always have."""
    try:
        rendered = planned_template(template.content)
        if rendered is not None and all(isinstance(node, TextNode) for node in template.content):
            return Message(role=template.role, content=rendered({}, {}), **_breakpoint(template))
    except (ValueError, TypeError, AttributeError):
        return None
    return rendered


def _value_problems(root: str, specs: Mapping[str, ValueSpec], values: object) -> list[Diagnostic]:
    """Every way ``values`` misses its declarations: required, undeclared, schema."""
    if not isinstance(values, Mapping):
        return [
            Diagnostic(
                code=ErrorCode.VALUE_SCHEMA,
                json_pointer=f"/{root}",
                message=f"{root} must be a mapping of name to value, not {type(values).__name__}",
            )
        ]
    noun = "input" if root == "inputs" else "context value"
    problems: list[Diagnostic] = []
    for name, spec in specs.items():
        if name not in values or (spec.kind is not None and values[name] is None):
            if spec.required:
                problems.append(
                    Diagnostic(
                        code=ErrorCode.VALUE_REQUIRED,
                        json_pointer=json_pointer([root, name]),
                        message=f"required {noun} {name!r} is missing",
                    )
                )
            continue
        if spec.kind is None:  # a part value is checked by binding it (_bind_parts)
            problems.extend(_schema_problems(spec, values[name], (root, name), noun))
    for name in values:
        if name not in specs:
            declared = ", ".join(sorted(specs)) or "none"
            problems.append(
                Diagnostic(
                    code=ErrorCode.VALUE_UNKNOWN,
                    json_pointer=json_pointer([root, str(name)]),
                    message=f"{noun} {name!r} is not declared (declared: {declared})",
                )
            )
    return problems


def _schema_problems(
    spec: ValueSpec, value: object, path: tuple[str, str], noun: str
) -> list[Diagnostic]:
    what = f"{noun} {path[1]!r}"
    if not is_json(value):
        return [
            Diagnostic(
                code=ErrorCode.VALUE_SCHEMA,
                json_pointer=json_pointer(path),
                message=(
                    f"{what} is not JSON data (objects with string keys, arrays, strings, "
                    "finite numbers, booleans and null only)"
                ),
            )
        ]
    # A contract built directly, not through parse_contract, may carry a broken schema; its
    # check and validator are made once per spec (``schema_errors`` keeps both).
    errors = schema_errors(spec.json_schema, value, holder=spec)
    if not errors:
        return []
    pointer = json_pointer(path)
    if isinstance(errors, str):
        return [
            Diagnostic(
                code=ErrorCode.CONTRACT_INVALID,
                json_pointer=pointer,
                message=f"the schema declared for {what} is invalid: {errors}",
            )
        ]
    return [
        Diagnostic(
            code=ErrorCode.VALUE_SCHEMA,
            json_pointer=pointer + at,
            message=f"{what}: {message}",
        )
        for at, message in errors
    ]
