"""The per-contract caches give exactly what the uncached paths give
(adr/0028-per-contract-caches.md): the quick schema verdict, the request fingerprint's frame,
the planned templates and the identity-keyed ``HeldCache``."""

from __future__ import annotations

import gc
import threading
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runport.contracts import CompiledInteraction, Message, ToolSpec, fingerprint
from runport.core import HeldCache, compile_contract, parse_contract
from runport.core._contract import MessageTemplate
from runport.core._render import Scope, render_nodes
from runport.core._render_plan import planned_template
from runport.core._request_fingerprint import request_fingerprint
from runport.core._schema import bounded_validator
from runport.core._schema_quick import quick_check
from runport.core._schema_refs import local_resolve

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-3, 3, allow_nan=False),
    st.text(max_size=4),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)

# ---- the quick verdict -----------------------------------------------------------------------

simple_schemas = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["string", "boolean", "null", "object", "array"]),
        "minLength": st.integers(0, 3),
        "maxLength": st.integers(0, 4),
        "enum": st.lists(st.text(max_size=2), min_size=1, max_size=3),
        "description": st.text(max_size=5),
    },
)
names = st.text("abc", max_size=2)
type_names = st.sampled_from(["string", "boolean", "null", "object", "array", "integer", "number"])
leaf_schemas = st.fixed_dictionaries(
    {},
    optional={
        "type": type_names | st.lists(type_names, min_size=1, max_size=3, unique=True),
        "minLength": st.integers(0, 3),
        "maxLength": st.integers(0, 4),
        "minimum": st.integers(-3, 3) | st.floats(-3, 3),
        "exclusiveMaximum": st.integers(-3, 3),
        "enum": st.lists(st.text(max_size=2), min_size=1, max_size=3),
        "const": st.text(max_size=1),
        "pattern": st.sampled_from(["^a", "b$", "c"]),
        "format": st.sampled_from(["date", "date-time", "email", "unknown"]),
        "minItems": st.integers(0, 2),
        "maxProperties": st.integers(0, 2),
        "title": st.text(max_size=3),
    },
)
common_schemas = st.recursive(
    leaf_schemas | st.booleans(),
    lambda inner: st.fixed_dictionaries(
        {},
        optional={
            "type": type_names,
            "properties": st.dictionaries(names, inner, max_size=3),
            "required": st.lists(names, max_size=2, unique=True),
            "additionalProperties": inner,
            "items": inner,
            "prefixItems": st.lists(inner, max_size=2),
            "allOf": st.lists(inner, min_size=1, max_size=2),
            "anyOf": st.lists(inner, min_size=1, max_size=2),
            "$ref": st.just("#/$defs/named"),
        },
    ),
    max_leaves=6,
)
common_values = st.recursive(
    scalars | st.sampled_from(["a", "abc", "2026-12-01", "2026-12-01T10:00:00Z", "a@b.c", 1.0]),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(names, inner, max_size=3)),
    max_leaves=8,
)


@settings(deadline=None)
@given(schema=simple_schemas, value=json_values)
def test_the_quick_verdict_is_jsonschemas_verdict(schema: dict[str, Any], value: Any) -> None:
    quick = quick_check(schema)
    assert quick is not None
    assert quick(value) == bounded_validator(schema).is_valid(value)


@settings(deadline=None)
@given(schema=common_schemas, named=leaf_schemas, value=common_values)
def test_the_quick_verdict_of_common_schemas_is_jsonschemas_verdict(
    schema: Any, named: dict[str, Any], value: Any
) -> None:
    """Objects, arrays, references and allOf/anyOf too (ADR 0034: every closed subtree of a
    streamed answer is checked, so the common valid subtree must skip jsonschema)."""
    whole = {"$defs": {"named": named}, "allOf": [schema]}
    quick = quick_check(whole, local_resolve(whole))
    if quick is None:  # a False schema somewhere: jsonschema decides
        return
    assert quick(value) == bounded_validator(whole).is_valid(value), (whole, value)


def test_schemas_past_the_common_shapes_have_no_quick_verdict() -> None:
    for schema in (
        {"enum": ["a", 1]},
        {"const": True},
        {"minLength": True},
        {"multipleOf": 2},
        {"oneOf": [{"type": "string"}]},
        {"not": {"type": "string"}},
        {"uniqueItems": True},
        {"patternProperties": {"^a": {}}, "additionalProperties": False},
        {"properties": {"a": False}},
        {"$ref": "#/$defs/a", "$defs": {"a": {}}},  # no resolver given
        {"properties": {"a": {"$id": "https://example.com/a"}}},
        {"x-vendor": 1},
    ):
        assert quick_check(schema) is None, schema


# ---- the request fingerprint -----------------------------------------------------------------

objects = st.dictionaries(st.text(max_size=4), json_values, max_size=3)
texts = st.text(max_size=12)
messages = st.lists(
    st.builds(
        Message,
        role=st.sampled_from(["system", "user", "assistant", "tool"]),
        content=texts,
        tool_call_id=st.one_of(st.none(), st.text(min_size=1, max_size=3)),
    ),
    max_size=3,
)
tools = st.one_of(
    st.none(),
    st.lists(
        st.builds(ToolSpec, name=st.text(min_size=1, max_size=3), parameters=objects), max_size=2
    ),
)


interactions = st.builds(
    CompiledInteraction,
    compiler=texts,
    contract_id=st.just("c"),
    contract_version=texts,
    messages=messages,
    output_schema=objects,
    required_capabilities=st.lists(st.text(max_size=3), max_size=3),
    runtime_policy=objects,
    extensions=objects,
    tools=tools,
)


@settings(deadline=None)
@given(interaction=interactions)
def test_the_framed_fingerprint_is_the_fingerprint(interaction: CompiledInteraction) -> None:
    assert request_fingerprint(interaction) == fingerprint(interaction)
    assert request_fingerprint(interaction) == fingerprint(interaction)  # from the frame


def test_values_equal_in_python_but_not_in_json_get_their_own_frames() -> None:
    seen = set()
    for value in (1, 1.0, True, -0.0, 0.0, 0, False):
        interaction = CompiledInteraction(
            compiler="c",
            contract_id="c",
            contract_version="1",
            messages=[Message(role="user", content="hi")],
            output_schema={},
            runtime_policy={"t": value},
        )
        assert request_fingerprint(interaction) == fingerprint(interaction)
        seen.add(request_fingerprint(interaction))
    assert len(seen) == 7


def test_a_compiled_interaction_changed_afterwards_is_fingerprinted_as_it_now_is() -> None:
    contract = parse_contract(_contract([{"kind": "text", "value": "hi"}]))
    first = compile_contract(contract, inputs={})
    assert request_fingerprint(first) == fingerprint(first)
    first.runtime_policy["temperature"] = 1
    first.output_schema["minLength"] = 2
    assert request_fingerprint(first) == fingerprint(first)
    assert request_fingerprint(first) != request_fingerprint(compile_contract(contract, inputs={}))


# ---- planned templates -----------------------------------------------------------------------

refs = st.sampled_from(
    ["inputs.a", "inputs.b", "inputs.a.x", "inputs.b.1", "inputs.b.0.x", "context.c", "inputs.zz"]
)
expressions = st.recursive(
    st.one_of(
        refs.map(lambda path: {"kind": "ref", "path": path}),
        json_values.map(lambda value: {"kind": "literal", "value": value}),
    ),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda p: {"kind": "equals", "left": p[0], "right": p[1]}),
        inner.map(lambda e: {"kind": "not", "expr": e}),
        st.lists(inner, min_size=1, max_size=3).map(lambda es: {"kind": "and", "exprs": es}),
        st.lists(inner, min_size=1, max_size=3).map(lambda es: {"kind": "or", "exprs": es}),
    ),
    max_leaves=4,
)
filters = st.lists(st.sampled_from(["trim", "lower", "upper", "json"]), max_size=2)
nodes = st.recursive(
    st.one_of(
        texts.map(lambda text: {"kind": "text", "value": text}),
        st.tuples(expressions, filters).map(
            lambda p: {"kind": "interpolate", "expression": p[0], "filters": p[1]}
        ),
    ),
    lambda inner: st.tuples(
        expressions, st.lists(inner, max_size=3), st.lists(inner, max_size=2)
    ).map(lambda p: {"kind": "when", "condition": p[0], "then": p[1], "else": p[2]}),
    max_leaves=6,
)


@settings(deadline=None)
@given(
    content=st.lists(nodes, max_size=4),
    a=json_values,
    b=json_values,
    c=json_values,
)
def test_a_planned_template_renders_what_render_nodes_renders(
    content: list[dict[str, Any]], a: Any, b: Any, c: Any
) -> None:
    template = MessageTemplate.model_validate({"role": "user", "content": content})
    planned = planned_template(template.content)
    assert planned is not None
    inputs, context = {"a": a, "b": b}, {"c": c}
    errors: list[Any] = []
    assert planned(inputs, context) == render_nodes(
        template.content, Scope(inputs, context), "/messages/0/content", errors
    )
    assert errors == []


def test_templates_that_may_owe_a_diagnostic_are_left_to_render_nodes() -> None:
    for content in (
        [{"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs"}}],
        [{"kind": "interpolate", "expression": {"kind": "ref", "path": "elsewhere.x"}}],
        [
            {
                "kind": "for_each",
                "collection": {"kind": "ref", "path": "inputs.a"},
                "item": "x",
                "body": [{"kind": "text", "value": "-"}],
            }
        ],
    ):
        template = MessageTemplate.model_validate({"role": "user", "content": content})
        assert planned_template(template.content) is None


def _contract(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "api_version": "runport/v1alpha1",
        "id": "c",
        "version": "0.1.0",
        "inputs": {"a": {"schema": {}}},
        "messages": [
            {"role": "system", "content": [{"kind": "text", "value": "fixed"}]},
            {"role": "user", "content": content},
        ],
        "output_schema": {"type": "string", "minLength": 1},
        "runtime_policy": {"temperature": 0.5, "stop": ["x"]},
    }


def test_a_compiled_interaction_is_the_one_validated_from_scratch() -> None:
    contract = parse_contract(
        _contract([{"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.a"}}])
    )
    for value in ("one", {"k": [1, 2.0]}, None):
        compiled = compile_contract(contract, inputs={"a": value})
        fresh = CompiledInteraction(**dict(compiled))
        assert compiled == fresh
        assert compiled.model_fields_set == fresh.model_fields_set
        assert compiled.model_dump_json() == fresh.model_dump_json()
        assert compiled.messages[0] is compile_contract(contract, inputs={}).messages[0]


# ---- HeldCache -------------------------------------------------------------------------------


class _Holder:
    pass


def test_an_entry_leaves_with_its_holder_and_a_new_object_finds_none() -> None:
    cache: HeldCache[int] = HeldCache()
    holder = _Holder()
    assert cache.put(holder, 7) == 7
    assert cache.get(holder) == 7
    del holder
    gc.collect()
    assert len(cache) == 0
    assert cache.get(_Holder()) is None


def test_the_cache_stays_bounded_and_keeps_answering() -> None:
    cache: HeldCache[int] = HeldCache(limit=8)
    kept = [_Holder() for _ in range(50)]
    for index, holder in enumerate(kept):
        cache.put(holder, index)
    assert len(cache) <= 8
    assert cache.get(kept[-1]) == 49


def test_threads_sharing_a_cache_see_only_whole_entries() -> None:
    cache: HeldCache[tuple[int, int]] = HeldCache(limit=16)
    holders = [_Holder() for _ in range(64)]
    problems: list[str] = []

    def hammer(seed: int) -> None:
        for step in range(2000):
            holder = holders[(seed * 7 + step) % len(holders)]
            found = cache.get(holder)
            if found is None:
                cache.put(holder, (id(holder), id(holder)))
            elif found != (id(holder), id(holder)):
                problems.append(f"{found} for {id(holder)}")

    threads = [threading.Thread(target=hammer, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert len(cache) <= 16


def test_an_interaction_built_around_validation_is_fingerprinted_the_long_way() -> None:
    class Noted(Message):
        note: str = "extra"

    odd = CompiledInteraction.model_construct(
        compiler="c",
        contract_id="c",
        contract_version="1",
        messages=[Noted(role="user", content="hi")],
        output_schema={},
    )
    assert request_fingerprint(odd) == fingerprint(odd)
    bare = CompiledInteraction.model_construct(compiler="c", output_schema={})
    assert request_fingerprint(bare) == fingerprint(bare)
