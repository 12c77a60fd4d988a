"""JSON values with JavaScript's semantics: String(), UTF-16 lengths and order, truthiness
(deep equality is in :mod:`.equality`).

Values are plain Python JSON data (``dict`` with ``str`` keys, ``list``, ``str``, ``int``,
``float``, ``bool``, ``None``). ``bool`` is a subclass of ``int`` in Python but a distinct JSON
type, so every check here uses ``type(x) is ...``: ``True != 1`` while ``2 == 2.0``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from ...dsl.values import UNDEFINED
from ...errors import ExprError
from .limits import MAX_JSON_DEPTH, MAX_JSON_TEXT_LENGTH

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


def joined(parts: Sequence[str]) -> str:
    """The strings ``parts`` one after the other, as ``+`` joins them; ExprError
    ``resource_limit`` instead when that would be longer than ``MAX_JSON_TEXT_LENGTH`` UTF-16
    code units, with nothing built. A code point is one or two code units, so only a text near
    the limit is measured in UTF-16."""
    size = sum(map(len, parts))
    if size > MAX_JSON_TEXT_LENGTH // 2 and (
            size > MAX_JSON_TEXT_LENGTH or sum(map(utf16_len, parts)) > MAX_JSON_TEXT_LENGTH):
        raise ExprError("resource_limit", f"'+' would build a string longer than {MAX_JSON_TEXT_LENGTH:,} "
                        "characters")
    return "".join(parts)


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact, insertion order, non-ASCII kept, JS number format.

    The length of the text is computed first, visiting each container once (shared parts make
    the text exponentially longer than the value): beyond ``MAX_JSON_TEXT_LENGTH`` it is a
    ``resource_limit`` error and nothing is built.
    """
    texts: dict[int, str] = {}
    if _json_length(value, {}, texts) > MAX_JSON_TEXT_LENGTH:
        raise ExprError("resource_limit", "str() would build a JSON text longer than "
                        f"{MAX_JSON_TEXT_LENGTH} characters")
    parts: list[str] = []
    _write_json(value, parts, texts)
    return "".join(parts)


def _json_length(value: Any, sizes: dict[int, int], texts: dict[int, str]) -> int:
    """The UTF-16 length of ``JSON.stringify(value)``, memoised by container id in ``sizes``.
    The text of every scalar (keys included) is kept in ``texts``, by id, for the writer: the
    value holds them all, so their ids stay theirs while it is written."""
    kind = type(value)
    if kind is not dict and kind is not list:
        text = texts.get(id(value))
        if text is None:
            text = texts[id(value)] = _json_scalar(value)
        return len(text) if text.isascii() else utf16_len(text)
    known = sizes.get(id(value))
    if known is not None:
        return known
    if kind is dict:  # braces, a colon per member and the commas between them
        total = 2 * len(value) + 1 if value else 2
        items: Iterable[Any] = chain.from_iterable(value.items())
    else:
        total = len(value) + 1 if value else 2
        items = value
    for item in items:
        kind = type(item)
        if kind is dict or kind is list:
            total += _json_length(item, sizes, texts)
            continue
        text = texts.get(id(item))
        if text is None:
            text = texts[id(item)] = _json_scalar(item)
        total += len(text) if text.isascii() else utf16_len(text)
    sizes[id(value)] = total
    return total


def _write_json(value: Any, out: list[str], texts: dict[int, str]) -> None:
    """Append the text of the container ``value`` to ``out``; scalars are in ``texts``."""
    if type(value) is dict:
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append(("," if i else "") + texts[id(key)] + ":")
            if type(item) is dict or type(item) is list:
                _write_json(item, out, texts)
            else:
                out.append(texts[id(item)])
        out.append("}")
        return
    if type(value) is not list:
        out.append(texts[id(value)])
        return
    out.append("[")
    for i, item in enumerate(value):
        if i:
            out.append(",")
        if type(item) is dict or type(item) is list:
            _write_json(item, out, texts)
        else:
            out.append(texts[id(item)])
    out.append("]")


def _json_scalar(value: Any) -> str:
    if type(value) is str:
        return json_string(value)
    text = js_string(value)
    return "null" if text in ("Infinity", "-Infinity", "NaN") else text  # as JSON.stringify


#: A surrogate not in a high-low pair: half of a UTF-16 pair on its own, which is no Unicode
#: character (JSON's ``"\\ud800"``; what a command line's bytes that are not UTF-8 become).
LONE_SURROGATE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


def json_string(text: str) -> str:
    """A JSON string literal as ``JSON.stringify`` writes it: a lone surrogate is escaped as
    ``\\udXXX`` (ES2019 well-formed stringify); other characters are kept."""
    quoted = json.dumps(text, ensure_ascii=False)
    if text.isascii():
        return quoted
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", quoted)


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
    """Whether ``value`` passes :func:`check_json` as it is (no exception, no message)."""
    return _scan(value, 0, [_SCAN_BUDGET]) is None


def check_json(value: Any, name: str) -> Any:
    """Validate a whole bound value: plain JSON types, finite numbers, depth <= 128, no cycles.

    Returns the value JavaScript would see: ``value`` itself, or, when it holds integers beyond
    2**53, a copy where they are rounded to doubles (beyond the double range they are Infinity,
    which is not a JSON value).
    """
    problem = _scan(value, 0, [_SCAN_BUDGET])
    if problem is _OVER_BUDGET:
        problem = _scan_shared(value)
    if problem is _UNSAFE_INTEGER:
        value = _as_doubles(value, 0, {})
        problem = _scan_shared(value)
    if problem is None:
        return value
    if problem == "depth":
        if _has_cycle(value):
            raise ExprError("type", f"'{name}' is not a JSON value (it contains a cycle)")
        raise ExprError("resource_limit", f"the value of '{name}' is nested more than "
                        f"{MAX_JSON_DEPTH} levels deep")
    raise ExprError("type", f"'{name}' is not a JSON value ({problem})")


# Containers the plain scan visits before it assumes shared sub-values (a DAG of depth 60 has
# 2**60 paths) and restarts with the scan that visits each container once.
_SCAN_BUDGET = 50_000
_OVER_BUDGET = "over budget"
_UNSAFE_INTEGER = "unsafe integer"


def _scan(value: Any, depth: int, budget: list[int]) -> str | None:
    """None when valid, "depth" when too deep, _OVER_BUDGET, _UNSAFE_INTEGER (an integer beyond
    2**53, which JavaScript rounds) or a description of the first non-JSON part."""
    kind = type(value)
    if kind is dict or kind is list:
        if depth >= MAX_JSON_DEPTH:
            return "depth"
        budget[0] -= 1
        if budget[0] < 0:
            return _OVER_BUDGET
        if kind is dict:
            for key in value:
                if type(key) is not str:
                    return f"an object key is a {type(key).__name__}, not a string"
            value = value.values()
        for item in value:
            kind = type(item)
            if kind in _PLAIN_SCALARS or (kind is float and item - item == 0):  # finite float
                if kind is not int or -_MAX_SAFE_INTEGER <= item <= _MAX_SAFE_INTEGER:
                    continue
                return _UNSAFE_INTEGER
            problem = _scan(item, depth + 1, budget)
            if problem is not None:
                return problem
        return None
    return _scalar_problem(value)


def _scalar_problem(value: Any) -> str | None:
    kind = type(value)
    if kind is int:
        return None if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER else _UNSAFE_INTEGER
    if kind is str or kind is bool or value is None:
        return None
    if kind is float:
        return None if math.isfinite(value) else f"the number {value!r} is not finite"
    if value is UNDEFINED:
        return "it is undefined"
    return f"a {kind.__name__} is not a JSON type"


def _scan_shared(value: Any) -> str | None:
    """:func:`_scan` visiting each container once: linear in distinct objects, even for a DAG."""
    heights: dict[int, int] = {}

    def height(node: Any, depth: int) -> int | str:
        """The nesting height below ``node`` (a container at ``depth``), or a problem."""
        if depth >= MAX_JSON_DEPTH:
            return "depth"
        known = heights.get(id(node))
        if known is not None:
            return "depth" if depth + known >= MAX_JSON_DEPTH else known
        items: Any = node
        if type(node) is dict:
            for key in node:
                if type(key) is not str:
                    return f"an object key is a {type(key).__name__}, not a string"
            items = node.values()
        tallest = 0
        for item in items:
            if type(item) is dict or type(item) is list:
                below = height(item, depth + 1)
                if type(below) is str:
                    return below
                tallest = max(tallest, below + 1)
            elif (problem := _scalar_problem(item)) is not None:
                return problem
        heights[id(node)] = tallest
        return tallest

    if type(value) is not dict and type(value) is not list:
        return _scalar_problem(value)
    found = height(value, 0)
    return found if type(found) is str else None


def _as_doubles(value: Any, depth: int, copies: dict[int, Any]) -> Any:
    """``value`` with integers beyond 2**53 rounded to doubles, sharing (and cycles) preserved;
    an integer beyond the double range becomes ``inf``, which the next scan reports."""
    kind = type(value)
    if kind is int:
        if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
            return value
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if (kind is not dict and kind is not list) or depth > MAX_JSON_DEPTH:
        return value
    if id(value) in copies:
        return copies[id(value)]
    if kind is list:
        items: list[Any] = []
        copies[id(value)] = items
        items.extend(_as_doubles(item, depth + 1, copies) for item in value)
        return items
    members: dict[str, Any] = {}
    copies[id(value)] = members
    for key, item in value.items():
        members[key] = _as_doubles(item, depth + 1, copies)
    return members


def _has_cycle(value: Any) -> bool:
    """Whether a container is its own descendant (only called once a value is known too deep).

    A depth-first walk that enters each container once, so shared sub-values cost nothing."""
    path: set[int] = set()
    done: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, True)]
    while stack:
        node, entering = stack.pop()
        if not entering:
            path.discard(id(node))
            done.add(id(node))
            continue
        if id(node) in path:
            return True
        if id(node) in done:
            continue
        path.add(id(node))
        stack.append((node, False))
        items = node.values() if type(node) is dict else node
        stack.extend((item, True) for item in items if type(item) in (dict, list))
        if len(path) > 100_000:
            return False
    return False
