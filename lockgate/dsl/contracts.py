"""Contract sets: the ``contracts`` of a spec, checked, compiled to validators and to JSON Schema.

:meth:`ContractSet.from_decls` never raises: every problem (a bad type, an unknown or recursive
reference, a reserved or malformed field name) is a :class:`~lockgate.dsl.diagnostics.Finding`
in ``.issues``, located by YAML path and by the span inside the type string. Usable contracts
compile to closures once (:class:`Contract`), because the engine checks every step result.

Runtime semantics (Stratum v1 §2): declared objects are strict (unknown keys rejected);
``object`` and ``array`` accept any map and any list; ``integer`` rejects ``1.2`` and booleans;
an optional field may be absent, ``null`` or a value of its type.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from ..errors import ContractError
from .diagnostics import Finding, YamlPath
from .types import (
    SCALARS,
    AnyArray,
    AnyObject,
    ArrayOf,
    Enum,
    Named,
    OptionalOf,
    Scalar,
    TypeExpr,
    Unknown,
    parse_type,
    strip_optional,
)

__all__ = [
    "MAX_VIOLATIONS",
    "RESERVED_FIELDS",
    "Contract",
    "ContractSet",
    "PathError",
    "UnknownContract",
    "Violation",
]

PathPart = str | int
MAX_VIOLATIONS = 100
RESERVED_FIELDS = frozenset({"__proto__", "constructor", "prototype"})
FIELD_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


# -- errors and violations ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Violation:
    """One way a value breaks a contract: where (``result.items[0].name``) and why (what was
    found, what was expected)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class UnknownContract(ContractError, KeyError):
    """``ContractSet[name]`` for a name that is not declared."""

    def __str__(self) -> str:
        return self.message


class PathError(ContractError):
    """A reference path that does not exist in a contract (REF_UNKNOWN_PATH).

    ``index`` is the position of the failing segment in the path, ``known`` the field names that
    were possible there (for did-you-mean).
    """

    def __init__(self, message: str, *, index: int, segment: PathPart, known: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.index = index
        self.segment = segment
        self.known = known


# -- validators -----------------------------------------------------------------------------------


class _Full(Exception):
    """Raised inside a check when the violation limit is reached."""


class _Sink:
    __slots__ = ("root", "items", "limit")

    def __init__(self, root: str, limit: int) -> None:
        self.root, self.items, self.limit = root, [], limit

    def add(self, path: tuple[PathPart, ...], message: str) -> None:
        self.items.append(Violation(_format_path(self.root, path), message))
        if len(self.items) >= self.limit:
            raise _Full


Checker = Callable[[Any, tuple[PathPart, ...], _Sink], None]
NamedLookup = Callable[[str], Checker]


def _format_path(root: str, path: tuple[PathPart, ...]) -> str:
    out = root
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif FIELD_NAME.fullmatch(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def _found(value: Any) -> str:
    """A short description of a JSON value for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {json.dumps(shown, ensure_ascii=False)}"
    if isinstance(value, list):
        return f"array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        keys = list(value)[:5]
        more = ", ..." if len(value) > 5 else ""
        return f"object with keys {', '.join(map(str, keys))}{more}" if keys else "empty object"
    return type(value).__name__


def _is_number(v: Any) -> bool:
    return (type(v) is int) or (type(v) is float and math.isfinite(v))


def _is_integer(v: Any) -> bool:
    return type(v) is int or (type(v) is float and math.isfinite(v) and v.is_integer())


_SCALAR_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: type(v) is bool,
}


def _compile(expr: TypeExpr, named: NamedLookup) -> Checker:
    """A closure checking a value against ``expr`` (which has no optional mark)."""
    if isinstance(expr, Scalar):
        return _test_checker(_SCALAR_TESTS[expr.name], expr.name)
    if isinstance(expr, AnyObject):
        return _test_checker(lambda v: isinstance(v, dict), "object")
    if isinstance(expr, AnyArray):
        return _test_checker(lambda v: isinstance(v, list), "array")
    if isinstance(expr, Enum):
        return _enum_checker(expr.members)
    if isinstance(expr, ArrayOf):
        return _array_checker(_compile(expr.element, named), expr.describe())
    if isinstance(expr, Named):
        return named(expr.name)
    if isinstance(expr, OptionalOf):
        return _optional_checker(_compile(expr.inner, named))
    return lambda value, path, sink: None  # Unknown: anything goes


def _test_checker(test: Callable[[Any], bool], expected: str) -> Checker:
    def check(value: Any, path: tuple[PathPart, ...], sink: _Sink) -> None:
        if not test(value):
            sink.add(path, f"expected {expected}, found {_found(value)}")

    return check


def _enum_checker(members: tuple[str, ...]) -> Checker:
    allowed = frozenset(members)
    listing = ", ".join(json.dumps(m, ensure_ascii=False) for m in members)

    def check(value: Any, path: tuple[PathPart, ...], sink: _Sink) -> None:
        if type(value) is not str or value not in allowed:
            sink.add(path, f"expected one of {listing}, found {_found(value)}")

    return check


def _array_checker(element: Checker, expected: str) -> Checker:
    def check(value: Any, path: tuple[PathPart, ...], sink: _Sink) -> None:
        if not isinstance(value, list):
            sink.add(path, f"expected {expected}, found {_found(value)}")
            return
        for index, item in enumerate(value):
            element(item, (*path, index), sink)

    return check


def _optional_checker(inner: Checker) -> Checker:
    def check(value: Any, path: tuple[PathPart, ...], sink: _Sink) -> None:
        if value is not None:
            inner(value, path, sink)

    return check


def _object_checker(title: str, fields: Mapping[str, TypeExpr], named: NamedLookup) -> Checker:
    compiled = [(name, _compile(t, named), t.optional, t.describe()) for name, t in fields.items()]
    allowed = frozenset(fields)
    listing = ", ".join(fields) if fields else "no fields"

    def check(value: Any, path: tuple[PathPart, ...], sink: _Sink) -> None:
        if not isinstance(value, dict):
            sink.add(path, f"expected {title} object, found {_found(value)}")
            return
        for name, field_check, optional, described in compiled:
            if name in value:
                field_check(value[name], (*path, name), sink)
            elif not optional:
                sink.add((*path, name), f'missing required field "{name}" (expected {described})')
        if not allowed.issuperset(value):
            for key in value:
                if key not in allowed:
                    sink.add((*path, key), f'unknown field "{key}"; {title} allows: {listing}')

    return check


# -- JSON Schema ----------------------------------------------------------------------------------


def _schema(expr: TypeExpr) -> dict[str, Any]:
    if isinstance(expr, Scalar):
        return {"type": expr.name}
    if isinstance(expr, AnyObject):
        return {"type": "object"}
    if isinstance(expr, AnyArray):
        return {"type": "array"}
    if isinstance(expr, Enum):
        return {"type": "string", "enum": list(dict.fromkeys(expr.members))}
    if isinstance(expr, ArrayOf):
        return {"type": "array", "items": _schema(expr.element)}
    if isinstance(expr, Named):
        return {"$ref": f"#/$defs/{expr.name}"}
    if isinstance(expr, OptionalOf):
        return {"anyOf": [_schema(expr.inner), {"type": "null"}]}
    return {}


def _object_schema(fields: Mapping[str, TypeExpr], *, strict: bool) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: _schema(t) for name, t in fields.items()},
        "required": [name for name, t in fields.items() if strict or not t.optional],
        "additionalProperties": False,
    }


# -- contracts ------------------------------------------------------------------------------------


class Contract:
    """A compiled contract: a named one from the spec, or the inline fields of a flow input."""

    __slots__ = ("name", "fields", "_check", "_owner")

    def __init__(self, name: str | None, fields: Mapping[str, TypeExpr], owner: ContractSet) -> None:
        self.name = name
        self.fields = dict(fields)
        self._owner = owner
        self._check = _object_checker(name or "input", self.fields, owner._checker)

    def __repr__(self) -> str:
        return f"Contract({self.name or '<inline>'}, {self.describe()})"

    def describe(self) -> dict[str, str]:
        """Field -> type, printed back in canonical form."""
        return {name: t.describe() for name, t in self.fields.items()}

    def check(self, value: Any, root: str = "result", *, limit: int = MAX_VIOLATIONS) -> list[Violation]:
        """Every violation of the contract by ``value`` (empty when it conforms), at most
        ``limit``; paths start at ``root``."""
        sink = _Sink(root, max(1, limit))
        try:
            self._check(value, (), sink)
        except _Full:
            pass
        return sink.items

    def json_schema(self, *, strict: bool = False) -> dict[str, Any]:
        """An equivalent JSON Schema (2020-12), nested contracts under ``$defs``.

        Optional fields are ``anyOf [T, null]`` and, by default, not required, so the schema
        accepts exactly what :meth:`check` accepts. ``strict=True`` lists every field as
        required (optional ones stay nullable), the shape OpenAI structured outputs ask for.
        """
        schema: dict[str, Any] = {} if strict else {"$schema": SCHEMA_DIALECT}
        if self.name:
            schema["title"] = self.name
        schema.update(_object_schema(self.fields, strict=strict))
        deps = sorted(self._owner._reachable(self.fields.values()) - {self.name})
        if deps:
            schema["$defs"] = {n: _object_schema(self._owner.fields_of(n), strict=strict) for n in deps}
        return schema


class ContractSet:
    """The contracts of one spec: parsed types, problems, compiled validators, path typing."""

    def __init__(self) -> None:
        self._types: dict[str, dict[str, TypeExpr | None]] = {}
        self._raw: dict[str, dict[str, Any]] = {}
        self._at: dict[str, YamlPath] = {}
        self._broken: dict[str, str] = {}
        self._compiled: dict[str, Contract] = {}
        self._paths: dict[tuple, TypeExpr | ContractError] = {}
        self.issues: list[Finding] = []

    # construction

    @classmethod
    def from_decls(cls, decls: Mapping[str, Any]) -> ContractSet:
        """Build from ``spec.contracts`` (name -> ContractDecl) or a plain name -> fields
        mapping. Never raises; problems are in ``.issues``."""
        self = cls()
        for name, decl in (decls.items() if isinstance(decls, Mapping) else ()):
            fields = getattr(decl, "fields", decl)
            self._raw[name] = dict(fields) if isinstance(fields, Mapping) else {}
            self._at[name] = tuple(getattr(decl, "at", ("contracts", name)))
        for name, fields in self._raw.items():
            types, findings = self._parse_fields(fields, self._at[name])
            self._types[name] = types
            self.issues.extend(findings)
            if findings:
                self._broken[name] = findings[0].message
        self._check_recursion()
        self._propagate_broken()
        return self

    def _parse_fields(self, fields: Mapping[Any, Any], at: YamlPath) -> tuple[dict[str, TypeExpr | None], list[Finding]]:
        types: dict[str, TypeExpr | None] = {}
        findings: list[Finding] = []
        for key, value in fields.items():
            path = (*at, key)
            name_problem = _field_name_problem(key, path)
            if name_problem is not None:
                findings.append(name_problem)
            expr, problems = self._field_type(value, path)
            findings.extend(problems)
            if name_problem is None:
                types[key] = expr
        return types, findings

    def _field_type(self, value: Any, path: YamlPath) -> tuple[TypeExpr | None, list[Finding]]:
        if not isinstance(value, str):
            message = f"a field type is a string such as string, Review[] or low|high; found {_found(value)}"
            return None, [Finding("LG301", message, path)]
        try:
            expr = parse_type(value)
        except ContractError as exc:
            return None, [self._type_finding(value, exc, path)]
        return expr, [self._unknown_ref(node, path) for node in _named_nodes(expr) if node.name not in self._raw]

    def _type_finding(self, text: str, exc: ContractError, path: YamlPath) -> Finding:
        lowercase = re.fullmatch(r"([a-z_]\w*)((?:\[\])*\??)", text)
        if lowercase and lowercase.group(1) in self._raw:
            word = lowercase.group(1)
            message = (
                f'contract "{word}" cannot be used as a type: contract references start with an '
                f"uppercase letter (rename the contract to {word[0].upper()}{word[1:]})"
            )
            return Finding("LG301", message, path, span=(0, len(word)))
        return Finding("LG301", exc.message, path, span=exc.span, replacement=exc.replacement)

    def _unknown_ref(self, node: Named, path: YamlPath) -> Finding:
        if node.name.lower() in SCALARS | {"object", "array"}:
            fix: str | None = node.name.lower()
        else:
            close = difflib.get_close_matches(node.name, list(self._raw), n=1, cutoff=0.6)
            fix = close[0] if close else None
        hint = f"; did you mean {fix}?" if fix else ""
        return Finding("LG302", f'unknown contract "{node.name}"{hint}', path, span=node.span, replacement=fix)

    def _graph(self) -> nx.DiGraph:
        graph: nx.DiGraph = nx.DiGraph()
        graph.add_nodes_from(self._types)
        for name, fields in self._types.items():
            for field_name, expr in fields.items():
                for node in _named_nodes(expr):
                    if node.name in self._types and not graph.has_edge(name, node.name):
                        graph.add_edge(name, node.name, field=field_name, span=node.span)
        return graph

    def _check_recursion(self) -> None:
        graph = self._graph()
        order = {name: i for i, name in enumerate(self._types)}
        for component in sorted(nx.strongly_connected_components(graph), key=lambda c: min(order[n] for n in c)):
            first = min(component, key=order.__getitem__)
            if len(component) == 1 and not graph.has_edge(first, first):
                continue
            cycle = nx.find_cycle(graph.subgraph(component), source=first)
            self.issues.append(self._recursion_finding(graph, cycle))
            for name in component:
                self._broken.setdefault(name, "it refers to itself")

    def _recursion_finding(self, graph: nx.DiGraph, cycle: list[tuple[str, str]]) -> Finding:
        steps = [f"{u}.{graph.edges[u, v]['field']}" for u, v in cycle]
        message = f"recursive contract reference: {' -> '.join(steps)} -> {cycle[0][0]}"
        u, v = cycle[0]
        edge = graph.edges[u, v]
        related = tuple(((*self._at[a], graph.edges[a, b]["field"]), f"{a} refers to {b} here") for a, b in cycle[1:])
        return Finding("LG303", message, (*self._at[u], edge["field"]), span=edge["span"], related=related)

    def _propagate_broken(self) -> None:
        graph = self._graph()
        for name in list(self._broken):
            for user in nx.ancestors(graph, name):
                self._broken.setdefault(user, f"it uses {name}, which is invalid")

    # mapping-like access

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._types)

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def __getitem__(self, name: str) -> Contract:
        """The compiled contract; UnknownContract (a KeyError) when not declared, ContractError
        when it or a contract it uses has issues."""
        if name not in self._types:
            raise UnknownContract(f'unknown contract "{name}"')
        if name in self._broken:
            raise ContractError(f'contract "{name}" cannot be used: {self._broken[name]}')
        if name not in self._compiled:
            try:
                self._compiled[name] = Contract(name, self._types[name], self)  # type: ignore[arg-type]
            except RecursionError:
                raise ContractError(f'contract "{name}" nests other contracts too deeply to compile') from None
        return self._compiled[name]

    def get(self, name: str) -> Contract | None:
        """The compiled contract, or None when unknown or unusable."""
        try:
            return self[name]
        except ContractError:
            return None

    def _checker(self, name: str) -> Checker:
        contract = self[name]
        return contract._check

    # flow inputs

    def check_fields(self, fields: Mapping[Any, Any], at: YamlPath) -> list[Finding]:
        """Problems of an inline field mapping (a flow's ``input``) located under ``at``: the
        same name, type and unknown-reference rules as declared contracts."""
        return self._parse_fields(fields, tuple(at))[1]

    def inline(self, fields: Mapping[str, Any]) -> Contract:
        """Compile an inline field mapping (a flow's ``input``); ContractError when invalid."""
        types, findings = self._parse_fields(fields, ("input",))
        if findings:
            raise ContractError(findings[0].message, findings[0].span)
        for expr in types.values():
            for node in _named_nodes(expr):
                if node.name in self._broken:
                    raise ContractError(f'contract "{node.name}" cannot be used: {self._broken[node.name]}')
        return Contract(None, types, self)  # type: ignore[arg-type]

    # typing

    def fields_of(self, type_or_name: TypeExpr | str | Mapping[str, Any]) -> dict[str, TypeExpr]:
        """Field -> type of a contract (by name or Named type) or of an inline field mapping;
        empty for anything without fields. Unparsable field types show as Unknown."""
        if isinstance(type_or_name, Mapping):
            return {k: _quiet_parse(v) for k, v in type_or_name.items() if isinstance(k, str)}
        expr = Named(type_or_name) if isinstance(type_or_name, str) else strip_optional(type_or_name)
        if not isinstance(expr, Named) or expr.name not in self._types:
            return {}
        return {k: v if v is not None else Unknown() for k, v in self._types[expr.name].items()}

    def type_at(self, root: TypeExpr | str | Mapping[str, Any], path: tuple[PathPart, ...]) -> TypeExpr:
        """The type a reference path leads to (Stratum v1 §3.3); raises PathError naming the
        first segment that does not exist. Paths stop being checked at ``object``, ``array``
        and unknown types; typed arrays take an index, then continue in the element type.

        Answers are memoised by (root, path) content: a spec asks the same few paths of the
        same few contracts thousands of times."""
        key = _path_key(root, path)
        if key is None:
            return self._type_at(root, path)
        found = self._paths.get(key)
        if found is None:
            if len(self._paths) >= _MAX_MEMO:
                self._paths.clear()
            try:
                found = self._paths[key] = self._type_at(root, path)
            except ContractError as exc:
                found = self._paths[key] = exc
        if isinstance(found, ContractError):
            raise found.with_traceback(None)
        return found

    def _type_at(self, root: TypeExpr | str | Mapping[str, Any], path: tuple[PathPart, ...]) -> TypeExpr:
        if isinstance(root, str) and root not in self._types:
            raise UnknownContract(f'unknown contract "{root}"')
        current: TypeExpr | Mapping[str, Any] = Named(root) if isinstance(root, str) else root
        for index, segment in enumerate(path):
            step = self._step(current, index, segment)
            if step is None:
                return Unknown()
            current = step
        return current if isinstance(current, TypeExpr) else Unknown()

    def _step(self, current: TypeExpr | Mapping[str, Any], index: int, segment: PathPart) -> TypeExpr | None:
        """One path segment further; None when the rest of the path is unchecked."""
        expr = current if isinstance(current, Mapping) else strip_optional(current)
        if isinstance(expr, (Mapping, Named)):
            return self._field_step(expr, index, segment)
        if isinstance(expr, (AnyObject, AnyArray, ArrayOf)):
            return self._container_step(expr, index, segment)
        if isinstance(expr, Unknown):
            return None
        message = f"{expr.describe()} has no fields or items; the path cannot continue at {_seg(segment)}"
        raise PathError(message, index=index, segment=segment)

    def _field_step(self, expr: Named | Mapping[str, Any], index: int, segment: PathPart) -> TypeExpr | None:
        if isinstance(expr, Named) and expr.name not in self._types:
            return None
        owner = expr.name if isinstance(expr, Named) else "input"
        known = tuple(self.fields_of(expr))
        if isinstance(segment, int):
            message = f"{owner} is an object; read its fields with .name, not [{segment}]"
            raise PathError(message, index=index, segment=segment, known=known)
        if segment not in known:
            listing = ", ".join(known) if known else "none"
            message = f'unknown field "{segment}" in {owner}; known fields: {listing}'
            raise PathError(message, index=index, segment=segment, known=known)
        return self.fields_of(expr)[segment]

    def _container_step(self, expr: TypeExpr, index: int, segment: PathPart) -> TypeExpr | None:
        if isinstance(expr, AnyObject):
            if isinstance(segment, int):
                message = f"object values are read with .name, not [{segment}]"
                raise PathError(message, index=index, segment=segment)
            return None
        if isinstance(segment, str):
            message = f'{expr.describe()} is an array: index it first, like [0], before ".{segment}"'
            raise PathError(message, index=index, segment=segment)
        return expr.element if isinstance(expr, ArrayOf) else None

    # shipping

    def closure(self, name: str) -> dict[str, dict[str, Any]]:
        """The contracts reachable from ``name`` (itself included), sorted by name, each as its
        declared field -> type mapping."""
        if name not in self._types:
            raise UnknownContract(f'unknown contract "{name}"')
        reachable = self._reachable(self._types[name].values()) | {name}
        return {n: dict(self._raw[n]) for n in sorted(reachable)}

    def digest(self, name: str) -> str:
        """sha256 (hex) of the canonical JSON of :meth:`closure`."""
        canonical = json.dumps(self.closure(name), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def _reachable(self, exprs: Any) -> set[str]:
        seen: set[str] = set()
        todo = [n.name for e in exprs for n in _named_nodes(e)]
        while todo:
            name = todo.pop()
            if name in seen or name not in self._types:
                continue
            seen.add(name)
            todo.extend(n.name for e in self._types[name].values() for n in _named_nodes(e))
        return seen


# -- helpers --------------------------------------------------------------------------------------

_MAX_MEMO = 20_000


def _path_key(root: Any, path: tuple[PathPart, ...]) -> tuple | None:
    """A hashable content key for a :meth:`ContractSet.type_at` question, or None when the
    root (an inline mapping with unhashable values) has none."""
    if isinstance(root, Mapping):
        root = ("inline", tuple(root.items()))
    key = (root.__class__, root, tuple(path))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _named_nodes(expr: TypeExpr | None) -> Iterator[Named]:
    while isinstance(expr, (OptionalOf, ArrayOf)):
        expr = expr.inner if isinstance(expr, OptionalOf) else expr.element
    if isinstance(expr, Named):
        yield expr


def _field_name_problem(key: Any, path: YamlPath) -> Finding | None:
    if not isinstance(key, str):
        return Finding("LG208", f"a field name must be a string, found {_found(key)}", path, at="key")
    if key in RESERVED_FIELDS:
        return Finding("LG206", f'"{key}" is a reserved name and cannot be a field', path, at="key")
    if not FIELD_NAME.fullmatch(key):
        message = f'invalid contract field name "{key}": use letters, digits and _, not starting with a digit'
        return Finding("LG208", message, path, at="key")
    return None


def _quiet_parse(value: Any) -> TypeExpr:
    if isinstance(value, TypeExpr):
        return value
    try:
        return parse_type(value)
    except ContractError:
        return Unknown()


def _seg(segment: PathPart) -> str:
    return f"[{segment}]" if isinstance(segment, int) else f".{segment}"
