"""JSON values with JavaScript's semantics: equality, String(), UTF-16 lengths and order, truthiness.

Values are plain Python JSON data (``dict`` with ``str`` keys, ``list``, ``str``, ``int``,
``float``, ``bool``, ``None``). ``bool`` is a subclass of ``int`` in Python but a distinct JSON
type, so every check here uses ``type(x) is ...``: ``True != 1`` while ``2 == 2.0``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ...dsl.values import UNDEFINED
from ...errors import ExprError
from .limits import MAX_JSON_DEPTH

_NUMBER_TYPES = (int, float)
_PLAIN_SCALARS = frozenset({str, int, bool, type(None)})
_MAX_SAFE_INTEGER = 2**53


def type_name(value: Any) -> str:
    """The JSON type name used in messages: null, boolean, number, string, array, object."""
    kind = type(value)
    if value is None:
        return "null"
    if kind is bool:
        return "boolean"
    if kind is int or kind is float:
        return "number"
    if kind is str:
        return "string"
    if kind is list:
        return "array"
    if kind is dict:
        return "object"
    if value is UNDEFINED:
        return "undefined"
    return kind.__name__


def is_number(value: Any) -> bool:
    kind = type(value)
    return kind is int or kind is float


def json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality: same type and value; arrays element-wise; objects by own key set."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in _NUMBER_TYPES and tb in _NUMBER_TYPES:
        return a == b
    if ta is not tb:
        return False
    if ta is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if ta is dict:
        return a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    return a == b


def truthy(value: Any) -> bool:
    """JavaScript truthiness over JSON values, where ``{}`` counts as empty (false)."""
    if value is None:
        return False
    kind = type(value)
    if kind is bool:
        return value
    if kind is int or kind is float:
        return value != 0
    return len(value) > 0


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units, so an emoji counts 2."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_key(text: str) -> bytes:
    """A sort key that orders strings by UTF-16 code units, as JavaScript compares them.

    Code point order (Python's) differs only when a character above U+FFFF meets one in
    U+E000..U+FFFF, so callers take the plain comparison when both strings are ASCII.
    """
    return text.encode("utf-16-be", "surrogatepass")


def string_compare(a: str, b: str) -> int:
    """-1, 0 or 1 by UTF-16 code unit order."""
    if not (a.isascii() and b.isascii()):
        a, b = utf16_key(a), utf16_key(b)  # type: ignore[assignment]
    return (a > b) - (a < b)


def normalize_number(value: float) -> int | float:
    """Round to a JS double: big ints become floats, integral floats within 2**53 become ints."""
    if type(value) is int:
        if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
            return value
        return float(value)  # OverflowError beyond 1e308: callers report it as non-finite
    if value.is_integer() and -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
        return int(value)
    return value


def js_string(value: Any) -> str:
    """JavaScript ``String(value)``, with compact JSON for arrays and objects."""
    kind = type(value)
    if kind is str:
        return value
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is float:
        return js_number(value)
    return js_json(value)


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact, insertion order, non-ASCII kept, JS number format."""
    parts: list[str] = []
    _write_json(value, parts)
    return "".join(parts)


def _write_json(value: Any, out: list[str]) -> None:
    kind = type(value)
    if kind is dict:
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _write_json(item, out)
        out.append("}")
    elif kind is list:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write_json(item, out)
        out.append("]")
    elif kind is str:
        out.append(json.dumps(value, ensure_ascii=False))
    else:
        text = js_string(value)
        out.append("null" if text in ("Infinity", "-Infinity", "NaN") else text)  # as JSON.stringify


def js_number(value: float) -> str:
    """JavaScript ``Number.prototype.toString()``: shortest round-trip digits, JS exponent rules."""
    if type(value) is int and -10**21 < value < 10**21:
        return str(value)
    try:
        value = float(value)
    except OverflowError:  # an int beyond the double range is Infinity as a JS number
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if value < 0 else ""
    digits, point = _shortest_digits(abs(value))
    return sign + _place_point(digits, point)


def _shortest_digits(value: float) -> tuple[str, int]:
    """(significant digits, n) with value = 0.digits * 10**n, from Python's shortest repr."""
    mantissa, _, exponent = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction.rstrip("0") if fraction != "0" else whole
    point = len(whole) + int(exponent or 0)
    stripped = all_digits.lstrip("0")
    point -= len(all_digits) - len(stripped)
    return stripped.rstrip("0") or "0", point


def _place_point(digits: str, n: int) -> str:
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    exponent = n - 1
    sign = "+" if exponent >= 0 else "-"
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{head}e{sign}{abs(exponent)}"


def is_json(value: Any) -> bool:
    """Whether ``value`` passes :func:`check_json` (no exception, no message)."""
    return _scan(value, 0) is None


def check_json(value: Any, name: str) -> None:
    """Validate a whole bound value: plain JSON types, finite numbers, depth <= 128, no cycles."""
    problem = _scan(value, 0)
    if problem is None:
        return
    if problem == "depth":
        if _has_cycle(value):
            raise ExprError("type", f"'{name}' is not a JSON value (it contains a cycle)")
        raise ExprError("resource_limit", f"the value of '{name}' is nested more than "
                        f"{MAX_JSON_DEPTH} levels deep")
    raise ExprError("type", f"'{name}' is not a JSON value ({problem})")


def _scan(value: Any, depth: int) -> str | None:
    """None when valid, "depth" when too deep, or a description of the first non-JSON part."""
    kind = type(value)
    if kind is dict or kind is list:
        if depth >= MAX_JSON_DEPTH:
            return "depth"
        if kind is dict:
            for key in value:
                if type(key) is not str:
                    return f"an object key is a {type(key).__name__}, not a string"
            value = value.values()
        for item in value:
            kind = type(item)
            if kind in _PLAIN_SCALARS or (kind is float and item - item == 0):  # finite float
                continue
            problem = _scan(item, depth + 1)
            if problem is not None:
                return problem
        return None
    if kind is str or kind is int or kind is bool or value is None:
        return None
    if kind is float:
        return None if math.isfinite(value) else f"the number {value!r} is not finite"
    if value is UNDEFINED:
        return "it is undefined"
    return f"a {kind.__name__} is not a JSON type"


def _has_cycle(value: Any) -> bool:
    """Whether a container is its own descendant (only called once a value is known too deep)."""
    path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, True)]
    while stack:
        node, entering = stack.pop()
        if not entering:
            path.discard(id(node))
            continue
        if id(node) in path:
            return True
        path.add(id(node))
        stack.append((node, False))
        items = node.values() if type(node) is dict else node
        stack.extend((item, True) for item in items if type(item) in (dict, list))
        if len(path) > 100_000:
            return False
    return False
