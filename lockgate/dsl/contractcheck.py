"""Runtime value checks: type expressions compiled to closures that report :class:`Violation` s.

This module owns what happens on every engine transition, when a step result meets its contract:
a type expression becomes a tree of closures once (:func:`object_checker`), and each check walks
the value, adding violations (path + what was found + what was expected) to a :class:`Sink` that
stops the walk at a limit. It knows nothing of contract names or declarations: a named reference
is resolved through the ``named`` lookup the caller passes in.

Runtime semantics (Stratum v1 §2): declared objects are strict (unknown keys rejected);
``object`` and ``array`` accept any map and any list; ``integer`` rejects ``1.2`` and booleans;
an optional field may be absent, ``null`` or a value of its type.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .types import AnyArray, AnyObject, ArrayOf, Enum, Named, OptionalOf, Scalar, TypeExpr

__all__ = [
    "FIELD_NAME",
    "Checker",
    "NamedLookup",
    "PathPart",
    "Sink",
    "SinkFull",
    "Violation",
    "describe_value",
    "object_checker",
]

PathPart = str | int
FIELD_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass(frozen=True, slots=True)
class Violation:
    """One way a value breaks a contract: where (``result.items[0].name``) and why (what was
    found, what was expected)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SinkFull(Exception):
    """Raised inside a check when the violation limit is reached."""


class Sink:
    """The violations of one check, their paths rooted at ``root``; full at ``limit``."""

    __slots__ = ("root", "items", "limit")

    def __init__(self, root: str, limit: int) -> None:
        self.root, self.items, self.limit = root, [], limit

    def add(self, path: tuple[PathPart, ...], message: str) -> None:
        self.items.append(Violation(_format_path(self.root, path), message))
        if len(self.items) >= self.limit:
            raise SinkFull


Checker = Callable[[Any, tuple[PathPart, ...], Sink], None]
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


def describe_value(value: Any) -> str:
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
    def check(value: Any, path: tuple[PathPart, ...], sink: Sink) -> None:
        if not test(value):
            sink.add(path, f"expected {expected}, found {describe_value(value)}")

    return check


def _enum_checker(members: tuple[str, ...]) -> Checker:
    allowed = frozenset(members)
    listing = ", ".join(json.dumps(m, ensure_ascii=False) for m in members)

    def check(value: Any, path: tuple[PathPart, ...], sink: Sink) -> None:
        if type(value) is not str or value not in allowed:
            sink.add(path, f"expected one of {listing}, found {describe_value(value)}")

    return check


def _array_checker(element: Checker, expected: str) -> Checker:
    def check(value: Any, path: tuple[PathPart, ...], sink: Sink) -> None:
        if not isinstance(value, list):
            sink.add(path, f"expected {expected}, found {describe_value(value)}")
            return
        for index, item in enumerate(value):
            element(item, (*path, index), sink)

    return check


def _optional_checker(inner: Checker) -> Checker:
    def check(value: Any, path: tuple[PathPart, ...], sink: Sink) -> None:
        if value is not None:
            inner(value, path, sink)

    return check


def object_checker(title: str, fields: Mapping[str, TypeExpr], named: NamedLookup) -> Checker:
    """A closure checking a value is a ``title`` object with exactly ``fields`` (strict: unknown
    keys are violations); ``named`` gives the checker of a referenced contract."""
    compiled = [(name, _compile(t, named), t.optional, t.describe()) for name, t in fields.items()]
    allowed = frozenset(fields)
    listing = ", ".join(fields) if fields else "no fields"

    def check(value: Any, path: tuple[PathPart, ...], sink: Sink) -> None:
        if not isinstance(value, dict):
            sink.add(path, f"expected {title} object, found {describe_value(value)}")
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
