"""Contract sets: the ``contracts`` of a spec, checked, compiled to validators and to JSON Schema.

:meth:`ContractSet.from_decls` never raises: every problem (a bad type, an unknown or recursive
reference, a reserved or malformed field name) is a :class:`~lockgate.dsl.diagnostics.Finding`
in ``.issues``, located by YAML path and by the span inside the type string. Usable contracts
compile to closures once (:class:`Contract`), because the engine checks every step result.

This module owns the public API: :class:`Contract` and :class:`ContractSet` (which contracts are
declared and usable, compiled on demand, memoised path typing, closures and digests). The work is
done beside it, each part in the module named for it: declaration rules in
:mod:`~lockgate.dsl.contractdecls`, value checks in :mod:`~lockgate.dsl.contractcheck`, reference
path typing in :mod:`~lockgate.dsl.contractpaths`, JSON Schema in :mod:`~lockgate.dsl.contractschema`.
Their names that were importable from here before the split (``Violation``, ``PathError``,
``RESERVED_FIELDS``, ``FIELD_NAME``, ``SCHEMA_DIALECT``...) still are: the ``noqa`` imports.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import ContractError
from .contractcheck import FIELD_NAME, Checker, NamedLookup, PathPart, Sink, SinkFull, Violation, object_checker  # noqa: F401
from .contractdecls import RESERVED_FIELDS, DeclaredNames, named_nodes, parse_fields, reference_problems
from .contractpaths import PathError, path_key, walk_path
from .contractschema import SCHEMA_DIALECT, contract_schema  # noqa: F401
from .diagnostics import Finding, YamlPath
from .types import Named, TypeExpr, Unknown, parse_type, strip_optional

__all__ = [
    "MAX_VIOLATIONS",
    "RESERVED_FIELDS",
    "Contract",
    "ContractSet",
    "PathError",
    "UnknownContract",
    "Violation",
]

MAX_VIOLATIONS = 100
_MAX_MEMO = 20_000


class UnknownContract(ContractError, KeyError):
    """``ContractSet[name]`` for a name that is not declared."""

    def __str__(self) -> str:
        return self.message


class Contract:
    """A compiled contract: a named one from the spec, or the inline fields of a flow input."""

    __slots__ = ("name", "fields", "_check", "_owner")

    def __init__(self, name: str | None, fields: Mapping[str, TypeExpr], owner: ContractSet) -> None:
        self.name = name
        self.fields = dict(fields)
        self._owner = owner
        self._check = object_checker(name or "input", self.fields, owner._checker)

    def __repr__(self) -> str:
        return f"Contract({self.name or '<inline>'}, {self.describe()})"

    def describe(self) -> dict[str, str]:
        """Field -> type, printed back in canonical form."""
        return {name: t.describe() for name, t in self.fields.items()}

    def check(self, value: Any, root: str = "result", *, limit: int = MAX_VIOLATIONS) -> list[Violation]:
        """Every violation of the contract by ``value`` (empty when it conforms), at most
        ``limit``; paths start at ``root``."""
        sink = Sink(root, max(1, limit))
        try:
            self._check(value, (), sink)
        except SinkFull:
            pass
        return sink.items

    def json_schema(self, *, strict: bool = False) -> dict[str, Any]:
        """An equivalent JSON Schema (2020-12), nested contracts under ``$defs``.

        Optional fields are ``anyOf [T, null]`` and, by default, not required, so the schema
        accepts exactly what :meth:`check` accepts. ``strict=True`` lists every field as
        required (optional ones stay nullable), the shape OpenAI structured outputs ask for.
        """
        deps = sorted(self._owner._reachable(self.fields.values()) - {self.name})
        defs = {name: self._owner.fields_of(name) for name in deps}
        return contract_schema(self.name, self.fields, defs, strict=strict)


class ContractSet:
    """The contracts of one spec: parsed types, problems, compiled validators, path typing."""

    def __init__(self) -> None:
        self._types: dict[str, dict[str, TypeExpr | None]] = {}
        self._raw: dict[str, dict[str, Any]] = {}
        self._declared = DeclaredNames(())
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
        self._declared = DeclaredNames(self._raw)
        for name, fields in self._raw.items():
            types, findings = parse_fields(fields, self._at[name], self._declared)
            self._types[name] = types
            self.issues.extend(findings)
            if findings:
                self._broken[name] = findings[0].message
        findings, self._broken = reference_problems(self._types, self._at, self._broken)
        self.issues.extend(findings)
        return self

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
        return parse_fields(fields, tuple(at), self._declared)[1]

    def inline(self, fields: Mapping[str, Any]) -> Contract:
        """Compile an inline field mapping (a flow's ``input``); ContractError when invalid."""
        types, findings = parse_fields(fields, ("input",), self._declared)
        if findings:
            raise ContractError(findings[0].message, findings[0].span)
        for expr in types.values():
            for node in named_nodes(expr):
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
        key = path_key(root, path)
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
        return walk_path(Named(root) if isinstance(root, str) else root, path, self._path_fields)

    def _path_fields(self, expr: Named | Mapping[str, Any]) -> dict[str, TypeExpr] | None:
        """The fields a path may continue with; None for an undeclared contract (unchecked)."""
        if isinstance(expr, Named) and expr.name not in self._types:
            return None
        return self.fields_of(expr)

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
        todo = [n.name for e in exprs for n in named_nodes(e)]
        while todo:
            name = todo.pop()
            if name in seen or name not in self._types:
                continue
            seen.add(name)
            todo.extend(n.name for e in self._types[name].values() for n in named_nodes(e))
        return seen


def _quiet_parse(value: Any) -> TypeExpr:
    if isinstance(value, TypeExpr):
        return value
    try:
        return parse_type(value)
    except ContractError:
        return Unknown()
