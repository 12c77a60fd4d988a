"""Runtime value checks: type expressions compiled to closures that report :class:`Violation` s.

This module owns what happens on every engine transition, when a step result meets its contract:
a type expression becomes a tree of closures once (:func:`object_checker`), and each check walks
the value, adding violations (path + what was found + what was expected) to a :class:`Sink` that
stops the walk at a limit. It knows nothing of contract names or declarations: a named reference
is resolved through the ``named`` lookup the caller passes in.

Runtime semantics (Stratum v1 §2): declared objects are strict (unknown keys rejected);
``object`` and ``array`` accept any JSON object and any JSON array; ``integer`` rejects ``1.2`` and booleans;
an optional field may be absent, ``null`` or a value of its type.

Values are JSON as expressions see them (:mod:`lockgate.dsl.expr.jsonvalues`), checked to the
bottom, inside ``object`` and ``array`` too, so that a value a contract accepts never fails
later in an ensure for not being JSON: objects are plain ``dict`` s with string keys (not a
subclass such as ``OrderedDict``), arrays plain ``list`` s, numbers finite doubles (an integer
beyond the largest double is refused, see :func:`~lockgate.dsl.values.integer_too_large`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .expr.jsonvalues import LONE_SURROGATE, json_string
from .types import AnyArray, AnyObject, ArrayOf, Enum, Named, OptionalOf, Scalar, TypeExpr
from .values import integer_too_large

__all__ = [
    "FIELD_NAME",
    "Checker",
    "NamedLookup",
    "PathPart",
    "Sink",
    "SinkFull",
    "Violation",
    "describe_value",
    "json_violations",
    "object_checker",
    "text_violations",
    "unstorable_text",
]

#: a key or an index; a hostile value's keys may be anything hashable (reported, not assumed)
PathPart = Any
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
        if type(part) is str:
            out += f".{part}" if FIELD_NAME.fullmatch(part) else f"[{json_string(part)}]"  # a lone surrogate escaped
        else:  # an index, or a key that is not a string (a violation of its own)
            out += f"[{_shown(part)}]"
    return out


def _shown(part: Any) -> str:
    """A short, safe text for a key that is not a string: its repr, cut at 40 characters (an
    integer too large to print, or a repr that fails, shows as its type)."""
    try:
        text = repr(part)
    except Exception:  # noqa: BLE001 - a hostile __repr__ (or a 5000-digit int) is not our failure
        return type(part).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def describe_value(value: Any) -> str:
    """A short description of a value for messages (of its type alone when it is not JSON)."""
    kind = type(value)
    if value is None:
        return "null"
    if kind is bool:
        return f"boolean {str(value).lower()}"
    if kind is int:
        huge = integer_too_large(value)
        return f"{huge}, beyond the largest number (about 1.8e308)" if huge else f"integer {value}"
    if kind is float:
        return f"number {value!r}" if math.isfinite(value) else f"number {value!r} (not finite)"
    if kind is str:
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {json.dumps(shown, ensure_ascii=False)}"
    if kind is list:
        return f"array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if kind is dict:
        keys = list(value)[:5]
        more = ", ..." if len(value) > 5 else ""
        shown_keys = (key if type(key) is str else _shown(key) for key in keys)
        return f"object with keys {', '.join(shown_keys)}{more}" if keys else "empty object"
    return _not_json(value)


def _not_json(value: Any) -> str:
    """How a value that is no JSON type is described: by its type, a subclass of dict or list
    (an ``OrderedDict``) saying it is not a plain one."""
    name = type(value).__name__
    if isinstance(value, dict):
        return f"{name} (a dict subclass, not a plain JSON object)"
    if isinstance(value, list):
        return f"{name} (a list subclass, not a plain JSON array)"
    return f"{name} (not a JSON type)"


def _is_number(v: Any) -> bool:
    return (type(v) is int and _fits(v)) or (type(v) is float and math.isfinite(v))


def _is_integer(v: Any) -> bool:
    return (type(v) is int and _fits(v)) or (type(v) is float and math.isfinite(v) and v.is_integer())


def _fits(v: int) -> bool:
    """Whether the int ``v`` is a double (all do but integers beyond about 1.8e308)."""
    return -_SAFE_INTEGER <= v <= _SAFE_INTEGER or integer_too_large(v) is None


_SAFE_INTEGER = 2**53
_STR_ONLY = frozenset({str})  # the key types of a plain JSON object (a str subclass is no key)


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
        return _any_checker(dict, "object")
    if isinstance(expr, AnyArray):
        return _any_checker(list, "array")
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


def _any_checker(kind: type, expected: str) -> Checker:
    """``object`` or ``array``: any plain ``kind`` whose contents are all JSON."""
    def check(value: Any, path: tuple[PathPart, ...], sink: Sink) -> None:
        if type(value) is not kind:
            sink.add(path, f"expected {expected}, found {describe_value(value)}")
        else:
            _json_contents(value, path, sink, set(), 0)

    return check


def json_violations(value: Any, root: str = "result", *, limit: int = 1) -> list[Violation]:
    """Where and why ``value`` is not JSON as contracts and expressions see it (see the module),
    up to ``limit`` violations; [] for a JSON value (one nested too deep may pass)."""
    sink = Sink(root, max(1, limit))
    try:
        _json_part(value, (), sink, set(), 0)
    except SinkFull:
        pass
    return sink.items


def text_violations(value: Any, root: str = "result", *, limit: int = 1) -> list[Violation]:
    """Where the JSON ``value`` holds text no store keeps (:func:`unstorable_text`), in a string
    or an object key, up to ``limit`` violations: what a store refuses, said of the value, not
    of the store's record it would go in. As deep as :func:`json_violations` looks."""
    sink = Sink(root, max(1, limit))
    try:
        _text_part(value, (), sink, set(), 0)
    except SinkFull:
        pass
    return sink.items


def unstorable_text(text: str) -> str | None:
    """What in ``text`` no store keeps, in a few words (``contains U+0000``); None for text a
    store keeps. U+0000 is refused by PostgreSQL; a lone surrogate is no Unicode at all."""
    if "\0" in text:
        return "contains U+0000, which no store keeps"
    found = None if text.isascii() else LONE_SURROGATE.search(text)
    if found is None:
        return None
    return f"holds the lone surrogate U+{ord(found.group()):04X}, which is not Unicode text; no store keeps it"


def _text_part(value: Any, path: tuple[PathPart, ...], sink: Sink, seen: set[int], depth: int) -> None:
    """Report each string in ``value`` (at ``depth``), key or value, no store keeps."""
    kind = type(value)
    if kind is str:
        problem = unstorable_text(value)
        if problem is not None:
            sink.add(path, problem)
    elif (kind is dict or kind is list) and depth < _SCAN_DEPTH and id(value) not in seen:
        seen.add(id(value))
        for key, item in (value.items() if kind is dict else enumerate(value)):
            problem = unstorable_text(key) if type(key) is str else None
            if problem is not None:
                sink.add((*path, key), f"its key {problem}")
            _text_part(item, (*path, key), sink, seen, depth + 1)


#: how deep :func:`_json_contents` looks: the evaluator's (and the stores') nesting limit, beyond
#: which they refuse a value themselves
_SCAN_DEPTH = 128


def _json_contents(node: Any, path: tuple[PathPart, ...], sink: Sink,
                   seen: set[int], depth: int) -> None:
    """Report each part of the container ``node`` (a dict or a list) that is not JSON (see the
    module). Each container is visited once (``seen``): shared parts cost nothing more, a cycle
    ends."""
    if depth >= _SCAN_DEPTH or id(node) in seen:
        return
    seen.add(id(node))
    if type(node) is dict:
        for key in node:
            if type(key) is not str:
                sink.add((*path, key), f"an object key must be a string, found {describe_value(key)}")
        items: Any = node.items()
    else:
        items = enumerate(node)
    for key, item in items:
        kind = type(item)
        if not (kind is str or kind is bool or item is None or (kind is float and math.isfinite(item))
                or (kind is int and -_SAFE_INTEGER <= item <= _SAFE_INTEGER)):
            _json_part(item, (*path, key), sink, seen, depth + 1)


def _json_part(value: Any, path: tuple[PathPart, ...], sink: Sink, seen: set[int], depth: int) -> None:
    """Report ``value`` (at ``depth``) or its parts when they are not JSON."""
    kind = type(value)
    if kind is dict or kind is list:
        _json_contents(value, path, sink, seen, depth)
    elif kind is int:
        if not _fits(value):
            sink.add(path, f"expected a number, found {describe_value(value)}")
    elif not (kind is str or kind is bool or value is None or (kind is float and math.isfinite(value))):
        sink.add(path, f"expected a JSON value, found {describe_value(value)}")


def _enum_checker(members: tuple[str, ...]) -> Checker:
    allowed = frozenset(members)
    listing = ", ".join(json.dumps(m, ensure_ascii=False) for m in members)

    def check(value: Any, path: tuple[PathPart, ...], sink: Sink) -> None:
        if type(value) is not str or value not in allowed:
            sink.add(path, f"expected one of {listing}, found {describe_value(value)}")

    return check


def _array_checker(element: Checker, expected: str) -> Checker:
    def check(value: Any, path: tuple[PathPart, ...], sink: Sink) -> None:
        if type(value) is not list:
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
        if type(value) is not dict:
            sink.add(path, f"expected {title} object, found {describe_value(value)}")
            return
        for name, field_check, optional, described in compiled:
            if name in value:
                field_check(value[name], (*path, name), sink)
            elif not optional:
                sink.add((*path, name), f'missing required field "{name}" (expected {described})')
        if not allowed.issuperset(value) or not _STR_ONLY.issuperset(map(type, value)):
            _odd_keys(value, path, sink, allowed, f"{title} allows: {listing}")

    return check


def _odd_keys(value: dict[Any, Any], path: tuple[PathPart, ...], sink: Sink, allowed: frozenset[str],
              allows: str) -> None:
    """Report the keys of a declared object that are not its fields, or not strings at all (an
    integer key keeps the message of an unknown field: it is one once stored as JSON)."""
    for key in value:
        if type(key) is str or (type(key) is int and _fits(key)):
            if key not in allowed:
                sink.add((*path, key), f'unknown field "{key}"; {allows}')
        else:
            sink.add((*path, key), f"a field name must be a string, found {describe_value(key)}; {allows}")
