"""Reference path typing (Stratum v1 §3.3): which type a path such as ``plan.owners[0].path`` leads
to inside a contract, or which segment does not exist (:class:`PathError`, REF_UNKNOWN_PATH).

This module owns the walk, one segment at a time, and its messages. Paths stop being checked at
``object``, ``array``, unknown types and undeclared contracts; typed arrays take an index, then
continue in the element type. The fields of a contract come from the ``fields`` lookup the caller
passes in (:class:`lockgate.dsl.contracts.ContractSet`, which also memoises the answers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ContractError
from .contractcheck import PathPart
from .types import AnyArray, AnyObject, ArrayOf, Named, TypeExpr, Unknown, strip_optional

__all__ = ["FieldsLookup", "PathError", "path_key", "walk_path"]

# The fields of a named contract or inline field mapping; None for an undeclared contract.
FieldsLookup = Callable[[Named | Mapping[str, Any]], Mapping[str, TypeExpr] | None]


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


def walk_path(root: TypeExpr | Mapping[str, Any], path: tuple[PathPart, ...], fields: FieldsLookup) -> TypeExpr:
    """The type ``path`` leads to from ``root``; PathError naming the first segment that does
    not exist, Unknown where the rest of the path is unchecked."""
    current: TypeExpr | Mapping[str, Any] = root
    for index, segment in enumerate(path):
        step = _step(current, index, segment, fields)
        if step is None:
            return Unknown()
        current = step
    return current if isinstance(current, TypeExpr) else Unknown()


def path_key(root: Any, path: tuple[PathPart, ...]) -> tuple | None:
    """A hashable content key for a path question, or None when the root (an inline mapping
    with unhashable values) has none."""
    if isinstance(root, Mapping):
        root = ("inline", tuple(root.items()))
    key = (root.__class__, root, tuple(path))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _step(current: TypeExpr | Mapping[str, Any], index: int, segment: PathPart, fields: FieldsLookup) -> TypeExpr | None:
    """One path segment further; None when the rest of the path is unchecked."""
    expr = current if isinstance(current, Mapping) else strip_optional(current)
    if isinstance(expr, (Mapping, Named)):
        return _field_step(expr, index, segment, fields)
    if isinstance(expr, (AnyObject, AnyArray, ArrayOf)):
        return _container_step(expr, index, segment)
    if isinstance(expr, Unknown):
        return None
    message = f"{expr.describe()} has no fields or items; the path cannot continue at {_seg(segment)}"
    raise PathError(message, index=index, segment=segment)


def _field_step(expr: Named | Mapping[str, Any], index: int, segment: PathPart, fields: FieldsLookup) -> TypeExpr | None:
    found = fields(expr)
    if found is None:
        return None
    owner = expr.name if isinstance(expr, Named) else "input"
    known = tuple(found)
    if isinstance(segment, int):
        message = f"{owner} is an object; read its fields with .name, not [{segment}]"
        raise PathError(message, index=index, segment=segment, known=known)
    if segment not in known:
        listing = ", ".join(known) if known else "none"
        message = f'unknown field "{segment}" in {owner}; known fields: {listing}'
        raise PathError(message, index=index, segment=segment, known=known)
    return found[segment]


def _container_step(expr: TypeExpr, index: int, segment: PathPart) -> TypeExpr | None:
    if isinstance(expr, AnyObject):
        if isinstance(segment, int):
            message = f"object values are read with .name, not [{segment}]"
            raise PathError(message, index=index, segment=segment)
        return None
    if isinstance(segment, str):
        message = f'{expr.describe()} is an array: index it first, like [0], before ".{segment}"'
        raise PathError(message, index=index, segment=segment)
    return expr.element if isinstance(expr, ArrayOf) else None


def _seg(segment: PathPart) -> str:
    return f"[{segment}]" if isinstance(segment, int) else f".{segment}"
