"""Reading the spec's JSON Schema by YAML path: the keys allowed at a mapping, a key's
description, a value's enum. Completion and hover use it; the schema file itself belongs to
:mod:`lockgate.dsl.schema`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from lockgate.dsl.diagnostics import YamlPath

Schema = dict[str, Any]


def _root() -> Schema:
    from lockgate.dsl.schema import spec_schema

    return spec_schema()


def _deref(node: Any) -> Schema:
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 32:
        from lockgate.dsl.schema import subschema

        merged = {k: v for k, v in node.items() if k != "$ref"}
        target = subschema(node["$ref"])
        node = {**target, **merged}
        seen += 1
    return node if isinstance(node, dict) else {}


def _branches(node: Schema) -> list[Schema]:
    """``node`` and the subschemas it combines (allOf/anyOf/oneOf, not if/then)."""
    out, stack = [], [_deref(node)]
    while stack:
        current = stack.pop()
        out.append(current)
        for key in ("allOf", "anyOf", "oneOf"):
            stack.extend(_deref(s) for s in current.get(key, ()) if isinstance(s, dict))
    return out


def _child(node: Schema, part: str | int) -> list[Schema]:
    found: list[Schema] = []
    for branch in _branches(node):
        if isinstance(part, int):
            items = branch.get("items")
            if isinstance(items, dict):
                found.append(_deref(items))
            continue
        props = branch.get("properties", {})
        if part in props and isinstance(props[part], dict):
            found.append(_deref(props[part]))
            continue
        matched = [s for p, s in branch.get("patternProperties", {}).items() if re.search(p, part)]
        if matched:
            found.extend(_deref(s) for s in matched)
        elif isinstance(branch.get("additionalProperties"), dict):
            found.append(_deref(branch["additionalProperties"]))
    return found


@lru_cache(maxsize=1024)
def at(path: YamlPath) -> tuple[Schema, ...]:
    """The subschemas that may describe the value at ``path``."""
    current = [_deref(_root())]
    for part in path:
        current = [child for node in current for child in _child(node, part)]
        if not current:
            return ()
    return tuple(current)


def properties(path: YamlPath) -> dict[str, Schema]:
    """Keys the schema names for the mapping at ``path``, with their (dereferenced) schemas."""
    out: dict[str, Schema] = {}
    for node in at(path):
        for branch in _branches(node):
            for name, sub in branch.get("properties", {}).items():
                if isinstance(sub, dict) and (name not in out or len(sub) > len(out[name])):
                    out[name] = _deref(sub)
    return out


def description(node: Schema) -> str | None:
    for branch in _branches(node):
        text = branch.get("markdownDescription") or branch.get("description")
        if text:
            return text
    return None


def key_description(path: YamlPath) -> str | None:
    """The description of the key at the end of ``path``."""
    nodes = at(path)
    return next((d for d in map(description, nodes) if d), None)


def enum_values(path: YamlPath) -> list[Any]:
    """Literal values the schema allows at ``path`` (enum and const, through anyOf/oneOf)."""
    values: list[Any] = []
    for node in at(path):
        for branch in _branches(node):
            for value in branch.get("enum", ()):
                if value not in values:
                    values.append(value)
            if "const" in branch and branch["const"] not in values:
                values.append(branch["const"])
    return values


def examples(path: YamlPath) -> list[Any]:
    return [e for node in at(path) for branch in _branches(node) for e in branch.get("examples", ())]


def is_object(node: Schema) -> bool:
    return any(b.get("type") == "object" or "properties" in b for b in _branches(node))


def is_array(node: Schema) -> bool:
    return any(b.get("type") == "array" or "items" in b for b in _branches(node))


def item_is_object(path: YamlPath) -> bool:
    """Whether the items of the list at ``path`` are mappings."""
    return any(is_object(s) for s in at((*path, 0)))
