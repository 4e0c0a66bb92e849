"""Schema ``pattern`` and ``patternProperties`` on a linear-time engine (docs/limits.md).

A pattern is someone else's text and so is the string it runs against — a model's answer, a
tool's arguments. Python's backtracking ``re`` takes exponential time on patterns such as
``^(a+)+$``, which freezes validation (and, in a server, every other request). RE2 runs in
time linear in the string, whatever the pattern; it has no backreferences and no lookaround, so
a pattern that needs them is refused when the contract loads, naming the pattern.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information
from jsonschema import Draft202012Validator, ValidationError, validators

from runport.core._document import json_pointer
from runport.core._schema_refs import subschemas

_PROPERTY_KEYWORDS = ("patternProperties", "unevaluatedProperties")
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported as a diagnostic, not on stderr


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern, _OPTIONS)


def _compile_problem(pattern: str) -> str | None:
    try:
        _compiled(pattern)
    except re2.error as error:
        reason = (
            error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else error
        )
        return str(reason)
    return None


def is_regex(value: object) -> bool:
    """The ``regex`` format: a pattern this engine can run."""
    return not isinstance(value, str) or _compile_problem(value) is None


def pattern_problems(schema: Mapping[str, Any]) -> list[str]:
    """Why a pattern in ``schema`` cannot be run (empty when all can).

    ``unevaluatedProperties`` beside ``patternProperties`` anywhere in one schema is refused
    too: jsonschema works out which properties a pattern evaluated with Python's ``re``, which
    this module cannot swap out.
    """
    problems: list[str] = []
    keywords: set[str] = set()
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, pointer = stack.pop()
        if not isinstance(node, Mapping):
            continue
        keywords.update(
            key for key in ("patternProperties", "unevaluatedProperties") if key in node
        )
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            reason = _compile_problem(pattern)
            if reason:
                problems.append(_refused(pattern, reason, f"{pointer}/pattern"))
        named = node.get("patternProperties")
        if isinstance(named, Mapping):
            for key in named:
                reason = _compile_problem(key)
                if reason:
                    at = pointer + json_pointer(("patternProperties", key))
                    problems.append(_refused(key, reason, at))
        stack.extend((child, pointer + json_pointer(path)) for _, path, child in subschemas(node))
    if {"patternProperties", "unevaluatedProperties"} <= keywords:
        problems.append(
            "unevaluatedProperties cannot be combined with patternProperties in one schema "
            "(their patterns would run on a backtracking engine); use additionalProperties"
        )
    return problems


def _refused(pattern: str, reason: str, at: str) -> str:
    return (
        f"pattern {pattern!r} cannot run on the linear-time engine (RE2): {reason}; "
        f"backreferences and lookaround are not supported (at schema{at})"
    )


def _pattern(
    validator: Any, pattern: str, instance: object, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not _compiled(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: object, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    for pattern, subschema in patterns.items():
        compiled = _compiled(pattern)
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: object, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    properties = schema.get("properties", {})
    patterns = [_compiled(pattern) for pattern in schema.get("patternProperties", {})]
    extras = sorted(
        key
        for key in instance
        if key not in properties and not any(pattern.search(key) for pattern in patterns)
    )
    if isinstance(additional, dict):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif additional is False and extras:
        joined = ", ".join(repr(extra) for extra in extras)
        if patterns:
            named = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {named}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({joined} {verb} unexpected)"
            )


PatternValidator = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    validators={
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)
"""Draft 2020-12 with every keyword that runs a pattern on RE2."""
