"""Checking contract declarations: field names and type strings parsed into type expressions, and
every problem found on the way as a :class:`~lockgate.dsl.diagnostics.Finding`.

This module owns the declaration rules and their messages: malformed or reserved field names
(LG206, LG208), bad type strings (LG301), unknown contract references with a did-you-mean
(LG302), and reference cycles (LG303), plus which contracts are unusable because of them. It
never raises: :class:`lockgate.dsl.contracts.ContractSet` keeps the results.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

import networkx as nx

from ..errors import ContractError
from .contractcheck import FIELD_NAME, describe_value
from .diagnostics import Finding, YamlPath
from .types import SCALARS, ArrayOf, Named, OptionalOf, TypeExpr, parse_type

__all__ = ["RESERVED_FIELDS", "named_nodes", "parse_fields", "reference_problems"]

RESERVED_FIELDS = frozenset({"__proto__", "constructor", "prototype"})

FieldTypes = dict[str, TypeExpr | None]


def parse_fields(fields: Mapping[Any, Any], at: YamlPath, declared: Collection[str]) -> tuple[FieldTypes, list[Finding]]:
    """Field -> parsed type (None when unparsable) of a field mapping located at ``at``, and
    its problems; fields with a bad name are left out. ``declared`` are the contract names a
    type may refer to."""
    types: FieldTypes = {}
    findings: list[Finding] = []
    for key, value in fields.items():
        path = (*at, key)
        name_problem = _field_name_problem(key, path)
        if name_problem is not None:
            findings.append(name_problem)
        expr, problems = _field_type(value, path, declared)
        findings.extend(problems)
        if name_problem is None:
            types[key] = expr
    return types, findings


def reference_problems(types: Mapping[str, FieldTypes], at: Mapping[str, YamlPath],
                       broken: Mapping[str, str]) -> tuple[list[Finding], dict[str, str]]:
    """The reference cycles among the contracts ``types`` (one LG303 finding each, in
    declaration order) and every unusable contract -> why: those already ``broken``, those in
    a cycle, and those that use any of them."""
    graph = _graph(types)
    unusable = dict(broken)
    findings: list[Finding] = []
    for component, cycle in _cycles(graph, list(types)):
        findings.append(_recursion_finding(graph, cycle, at))
        for name in component:
            unusable.setdefault(name, "it refers to itself")
    for name in list(unusable):
        for user in nx.ancestors(graph, name):
            unusable.setdefault(user, f"it uses {name}, which is invalid")
    return findings, unusable


def named_nodes(expr: TypeExpr | None) -> Iterator[Named]:
    """The contract reference inside ``expr`` (through optional and array marks), if any."""
    while isinstance(expr, (OptionalOf, ArrayOf)):
        expr = expr.inner if isinstance(expr, OptionalOf) else expr.element
    if isinstance(expr, Named):
        yield expr


BUILTIN_TYPES = SCALARS | {"object", "array"}


def _field_name_problem(key: Any, path: YamlPath) -> Finding | None:
    if not isinstance(key, str):
        return Finding("LG208", f"a field name must be a string, found {describe_value(key)}", path, at="key")
    if key in RESERVED_FIELDS:
        return Finding("LG206", f'"{key}" is a reserved name and cannot be a field', path, at="key")
    if not FIELD_NAME.fullmatch(key):
        message = f'invalid contract field name "{key}": use letters, digits and _, not starting with a digit'
        return Finding("LG208", message, path, at="key")
    return None


def _field_type(value: Any, path: YamlPath, declared: Collection[str]) -> tuple[TypeExpr | None, list[Finding]]:
    if not isinstance(value, str):
        message = f"a field type is a string such as string, Review[] or low|high; found {describe_value(value)}"
        return None, [Finding("LG301", message, path)]
    try:
        expr = parse_type(value)
    except ContractError as exc:
        return None, [_type_finding(value, exc, path, declared)]
    return expr, [_unknown_ref(node, path, declared) for node in named_nodes(expr) if node.name not in declared]


def _type_finding(text: str, exc: ContractError, path: YamlPath, declared: Collection[str]) -> Finding:
    lowercase = re.fullmatch(r"([a-z_]\w*)((?:\[\])*\??)", text)
    if lowercase and lowercase.group(1) in declared:
        word = lowercase.group(1)
        message = (
            f'contract "{word}" cannot be used as a type: contract references start with an '
            f"uppercase letter (rename the contract to {word[0].upper()}{word[1:]})"
        )
        return Finding("LG301", message, path, span=(0, len(word)))
    if lowercase and exc.replacement is not None and exc.replacement not in BUILTIN_TYPES | set(declared):
        return _misspelt_type(lowercase.group(1), path, declared)
    return Finding("LG301", exc.message, path, span=exc.span, replacement=exc.replacement)


def _misspelt_type(word: str, path: YamlPath, declared: Collection[str]) -> Finding:
    """An unknown lowercase type word: most often a misspelt built-in type (``nubmer``), else a
    contract name in the wrong case; the fix offered is only ever a name that exists."""
    close = difflib.get_close_matches(word, sorted(BUILTIN_TYPES), n=1, cutoff=0.7)
    if not close:
        close = difflib.get_close_matches(word[0].upper() + word[1:], list(declared), n=1, cutoff=0.7)
    fix = close[0] if close else None
    message = (f'unknown type "{word}"; ' + (f"did you mean {fix}?" if fix else
               "the built-in types are string, integer, number, boolean, object and array, and contract "
               "references start with an uppercase letter"))
    return Finding("LG301", message, path, span=(0, len(word)), replacement=fix)


def _unknown_ref(node: Named, path: YamlPath, declared: Collection[str]) -> Finding:
    if node.name.lower() in BUILTIN_TYPES:
        fix: str | None = node.name.lower()
    else:
        close = difflib.get_close_matches(node.name, list(declared), n=1, cutoff=0.6)
        fix = close[0] if close else None
    hint = f"; did you mean {fix}?" if fix else ""
    return Finding("LG302", f'unknown contract "{node.name}"{hint}', path, span=node.span, replacement=fix)


def _graph(types: Mapping[str, FieldTypes]) -> nx.DiGraph:
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(types)
    for name, fields in types.items():
        for field_name, expr in fields.items():
            for node in named_nodes(expr):
                if node.name in types and not graph.has_edge(name, node.name):
                    graph.add_edge(name, node.name, field=field_name, span=node.span)
    return graph


def _cycles(graph: nx.DiGraph, names: list[str]) -> Iterator[tuple[set[str], list[tuple[str, str]]]]:
    """Each group of contracts that refer to each other (in the order of their first
    declared member) with one cycle through that member."""
    order = {name: i for i, name in enumerate(names)}
    for component in sorted(nx.strongly_connected_components(graph), key=lambda c: min(order[n] for n in c)):
        first = min(component, key=order.__getitem__)
        if len(component) == 1 and not graph.has_edge(first, first):
            continue
        yield component, nx.find_cycle(graph.subgraph(component), source=first)


def _recursion_finding(graph: nx.DiGraph, cycle: list[tuple[str, str]], at: Mapping[str, YamlPath]) -> Finding:
    steps = [f"{u}.{graph.edges[u, v]['field']}" for u, v in cycle]
    message = f"recursive contract reference: {' -> '.join(steps)} -> {cycle[0][0]}"
    u, v = cycle[0]
    edge = graph.edges[u, v]
    related = tuple(((*at[a], graph.edges[a, b]["field"]), f"{a} refers to {b} here") for a, b in cycle[1:])
    return Finding("LG303", message, (*at[u], edge["field"]), span=edge["span"], related=related)
