from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml
from yaml.constructor import ConstructorError


class JsonModelLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that keeps JSON's data model.

    Unquoted dates stay strings (a ``format: date`` value must reach a schema as a string, not a
    ``datetime.date``), and a key repeated in one mapping is an error instead of the last one
    silently winning.
    """

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
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


JsonModelLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(text: str) -> Any:
    """Parse YAML (or JSON, which YAML reads too) into plain JSON-model values.

    A recursive alias (``x: &a [*a]``) makes a value that contains itself, which JSON cannot
    hold and which every later walk would recurse into forever; it is refused here as a YAML
    error.
    """
    value = yaml.load(text, Loader=JsonModelLoader)
    _refuse_cycles(value)
    return value


def _refuse_cycles(value: Any) -> None:
    stack: list[tuple[Any, frozenset[int]]] = [(value, frozenset())]
    while stack:
        item, ancestors = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if id(item) in ancestors:
            raise yaml.YAMLError("a recursive alias makes the document contain itself")
        inner = ancestors | {id(item)}
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, inner) for child in children)
