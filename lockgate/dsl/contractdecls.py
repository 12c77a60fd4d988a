"""Checking contract declarations: field names and type strings parsed into type expressions, and
every problem found on the way as a :class:`~lockgate.dsl.diagnostics.Finding`.

This module owns the declaration rules and their messages: malformed or reserved field names
(LG206, LG208), bad type strings (LG301), unknown contract references with a did-you-mean
(LG302), and reference cycles (LG303), plus which contracts are unusable because of them. It
never raises: :class:`lockgate.dsl.contracts.ContractSet` keeps the results.

Checking stays near-linear in the size of a spec: the declared names are indexed once per
contract set (:class:`DeclaredNames`), and each distinct unknown name is compared with a short
list of likely candidates rather than with every contract (a generated spec of 4,000 contracts
each naming a missing one took 42 s to validate).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

import networkx as nx

from ..errors import ContractError
from .contractcheck import FIELD_NAME, describe_value
from .diagnostics import Finding, YamlPath
from .namepool import NamePool
from .types import SCALARS, ArrayOf, Named, OptionalOf, TypeExpr, parse_type

__all__ = ["RESERVED_FIELDS", "DeclaredNames", "named_nodes", "parse_fields", "reference_problems"]

RESERVED_FIELDS = frozenset({"__proto__", "constructor", "prototype"})

FieldTypes = dict[str, TypeExpr | None]

#: Suggestions are worked out for this many distinct unknown words per contract set; a spec
#: with more (a generated or mangled one) gets a plain "unknown contract" for the rest, so the
#: work stays bounded however many unknown names a 10 MB file holds.
MAX_SUGGESTED = 500


class DeclaredNames(Collection[str]):
    """The contract names a type may refer to: a set for membership, and did-you-mean
    suggestions among them (:class:`~lockgate.dsl.namepool.NamePool`) for at most
    :data:`MAX_SUGGESTED` distinct words.

    Build one per contract set and pass it to every :func:`parse_fields` call, so that a spec
    with thousands of contracts and unknown references is not checked in quadratic time.
    """

    def __init__(self, names: Collection[str]) -> None:
        self._names = tuple(dict.fromkeys(names))
        self._set = frozenset(self._names)
        self._pool = NamePool(self._names)
        self._asked: set[tuple[str, float]] = set()

    @classmethod
    def of(cls, names: Collection[str]) -> DeclaredNames:
        """``names`` itself when already a DeclaredNames, else one built from it."""
        return names if isinstance(names, DeclaredNames) else cls(names)

    def __contains__(self, name: object) -> bool:
        return name in self._set

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def closest(self, word: str, cutoff: float) -> str | None:
        """``word`` when declared, else the declared name closest to it with ``cutoff``, or
        None (also once :data:`MAX_SUGGESTED` other words were asked about)."""
        if word in self._set:
            return word
        if (word, cutoff) not in self._asked:
            if len(self._asked) >= MAX_SUGGESTED:
                return None
            self._asked.add((word, cutoff))
        return self._pool.closest(word, cutoff)


def parse_fields(fields: Mapping[Any, Any], at: YamlPath, declared: Collection[str]) -> tuple[FieldTypes, list[Finding]]:
    """Field -> parsed type (None when unparsable) of a field mapping located at ``at``, and
    its problems; fields with a bad name are left out. ``declared`` are the contract names a
    type may refer to: pass the same :class:`DeclaredNames` to every call of a contract set."""
    declared = DeclaredNames.of(declared)
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
_BUILTIN_POOL = NamePool(sorted(BUILTIN_TYPES))


def _field_name_problem(key: Any, path: YamlPath) -> Finding | None:
    if not isinstance(key, str):
        return Finding("LG208", f"a field name must be a string, found {describe_value(key)}", path, at="key")
    if key in RESERVED_FIELDS:
        return Finding("LG206", f'"{key}" is a reserved name and cannot be a field', path, at="key")
    if not FIELD_NAME.fullmatch(key):
        message = f'invalid contract field name "{key}": use letters, digits and _, not starting with a digit'
        return Finding("LG208", message, path, at="key")
    return None


def _field_type(value: Any, path: YamlPath, declared: DeclaredNames) -> tuple[TypeExpr | None, list[Finding]]:
    if not isinstance(value, str):
        message = f"a field type is a string such as string, Review[] or low|high; found {describe_value(value)}"
        return None, [Finding("LG301", message, path)]
    try:
        expr = parse_type(value)
    except ContractError as exc:
        return None, [_type_finding(value, exc, path, declared)]
    return expr, [_unknown_ref(node, path, declared) for node in named_nodes(expr) if node.name not in declared]


def _type_finding(text: str, exc: ContractError, path: YamlPath, declared: DeclaredNames) -> Finding:
    lowercase = re.fullmatch(r"([a-z_]\w*)((?:\[\])*\??)", text)
    if lowercase and lowercase.group(1) in declared:
        word = lowercase.group(1)
        message = (
            f'contract "{word}" cannot be used as a type: contract references start with an '
            f"uppercase letter (rename the contract to {word[0].upper()}{word[1:]})"
        )
        return Finding("LG301", message, path, span=(0, len(word)))
    offered = exc.replacement
    if lowercase and offered is not None and offered not in BUILTIN_TYPES and offered not in declared:
        return _misspelt_type(lowercase.group(1), path, declared)
    return Finding("LG301", exc.message, path, span=exc.span, replacement=exc.replacement)


def _misspelt_type(word: str, path: YamlPath, declared: DeclaredNames) -> Finding:
    """An unknown lowercase type word: most often a misspelt built-in type (``nubmer``), else a
    contract name in the wrong case; the fix offered is only ever a name that exists."""
    fix = _BUILTIN_POOL.closest(word, 0.7) or declared.closest(word[0].upper() + word[1:], 0.7)
    message = (f'unknown type "{word}"; ' + (f"did you mean {fix}?" if fix else
               "the built-in types are string, integer, number, boolean, object and array, and contract "
               "references start with an uppercase letter"))
    return Finding("LG301", message, path, span=(0, len(word)), replacement=fix)


def _unknown_ref(node: Named, path: YamlPath, declared: DeclaredNames) -> Finding:
    lower = node.name.lower()
    fix = lower if lower in BUILTIN_TYPES else declared.closest(node.name, 0.6)
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
