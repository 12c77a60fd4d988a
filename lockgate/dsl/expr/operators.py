"""Binary operators over JSON values (reference §5.5), strict and without truthiness.

``BINARY[op](a, b)`` applies an operator to two evaluated operands and raises ``ExprError``
without a span on a type error (the compiler adds it). Numbers behave as JS doubles: results
are rounded to doubles, integral results within 2**53 are ``int``, and a division by zero or a
non-finite result is a type error. Strings compare by UTF-16 code units.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ...errors import ExprError
from .equality import json_equal, json_in
from .jsonvalues import joined, normalize_number, string_compare, type_name
from .parser import BLOCKED_MEMBERS

Code = Callable[[Any], Any]
Span = tuple[int, int]
COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">="})
_ORDER = {"<": lambda c: c < 0, "<=": lambda c: c <= 0, ">": lambda c: c > 0, ">=": lambda c: c >= 0}


def _error(message: str) -> ExprError:
    return ExprError("type", message)


def _number_result(value: float) -> int | float:
    try:
        value = normalize_number(value)
    except OverflowError:
        raise _error("the result is not a finite number") from None
    if type(value) is float and not math.isfinite(value):
        raise _error("the result is not a finite number")
    return value


def _both_numbers(op: str, a: Any, b: Any) -> None:
    ta, tb = type(a), type(b)
    if not ((ta is int or ta is float) and (tb is int or tb is float)):
        raise _error(f"'{op}' needs two numbers, received {type_name(a)} and {type_name(b)}")


def add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is str and tb is str:
        return joined((a, b))
    if (ta is int or ta is float) and (tb is int or tb is float):
        return _number_result(a + b)
    raise _error(f"'+' needs two numbers or two strings, received {type_name(a)} and {type_name(b)}")


def subtract(a: Any, b: Any) -> Any:
    _both_numbers("-", a, b)
    return _number_result(a - b)


def multiply(a: Any, b: Any) -> Any:
    _both_numbers("*", a, b)
    try:
        return _number_result(a * b)
    except OverflowError:
        raise _error("the result is not a finite number") from None


def divide(a: Any, b: Any) -> Any:
    _both_numbers("/", a, b)
    if b == 0:
        raise _error("division by zero")
    try:
        return _number_result(a / b)
    except OverflowError:
        raise _error("the result is not a finite number") from None


def ordering(op: str) -> Callable[[Any, Any], bool]:
    decide = _ORDER[op]

    def compare(a: Any, b: Any) -> bool:
        ta, tb = type(a), type(b)
        if (ta is int or ta is float) and (tb is int or tb is float):
            return decide((a > b) - (a < b))
        if ta is str and tb is str:
            return decide(string_compare(a, b))
        raise _error(f"'{op}' needs two numbers or two strings, received {type_name(a)} and "
                     f"{type_name(b)}")
    return compare


def contains(a: Any, b: Any) -> bool:
    """``a in b`` over arrays (deep equality), strings (substring) and objects (own keys)."""
    kind = type(b)
    if kind is list:
        return json_in(a, b)
    if kind is str:
        if type(a) is not str:
            raise _error(f"'in' with a string needs a string on the left, received {type_name(a)}")
        return a in b
    if kind is dict:
        if type(a) is not str:
            raise _error(f"'in' with an object needs a string key, received {type_name(a)}")
        if a in BLOCKED_MEMBERS:
            raise ExprError("validation", f"the key '{a}' cannot be tested")
        return a in b
    raise _error(f"'in' needs an array, string or object on the right, received {type_name(b)}")


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "==": json_equal,
    "!=": lambda a, b: not json_equal(a, b),
    "<": ordering("<"),
    "<=": ordering("<="),
    ">": ordering(">"),
    ">=": ordering(">="),
    "+": add,
    "-": subtract,
    "*": multiply,
    "/": divide,
    "in": contains,
}


def compare_literal(op: str, left: Code, literal: Any, span: Span) -> Code:
    """``x <op> literal``: the literal's type is known, so only ``x`` is checked."""
    if op in ("==", "!="):
        return _equal_literal(op == "==", left, literal)
    if type(literal) is int or type(literal) is float:
        return _order_number(op, left, literal, span)
    general = BINARY[op]

    def compare(scope):
        try:
            return general(left(scope), literal)
        except ExprError as exc:
            if exc.span is None:
                exc.span = span
            raise
    return compare


def _equal_literal(positive: bool, left: Code, literal: Any) -> Code:
    kind = type(literal)
    if kind is int or kind is float:
        def equal_number(scope):
            value = left(scope)
            kind = type(value)
            return ((kind is int or kind is float) and value == literal) is positive
        return equal_number
    if kind is str:
        def equal_string(scope):
            value = left(scope)
            return (type(value) is str and value == literal) is positive
        return equal_string

    def equal_identity(scope):  # true, false, null
        return (left(scope) is literal) is positive
    return equal_identity


def _order_number(op: str, left: Code, literal: float, span: Span) -> Code:
    def fail(value: Any) -> ExprError:
        return ExprError("type", f"'{op}' needs two numbers or two strings, received "
                         f"{type_name(value)} and number", span)
    # One closure per operator keeps the comparison inline (no dispatch per evaluation).
    if op == ">=":
        def ge(scope):
            value = left(scope)
            kind = type(value)
            if kind is int or kind is float:
                return value >= literal
            raise fail(value)
        return ge
    if op == ">":
        def gt(scope):
            value = left(scope)
            kind = type(value)
            if kind is int or kind is float:
                return value > literal
            raise fail(value)
        return gt
    if op == "<=":
        def le(scope):
            value = left(scope)
            kind = type(value)
            if kind is int or kind is float:
                return value <= literal
            raise fail(value)
        return le

    def lt(scope):
        value = left(scope)
        kind = type(value)
        if kind is int or kind is float:
            return value < literal
        raise fail(value)
    return lt


def in_literal_string(literal: str, right: Code, span: Span) -> Code:
    """``"text" in x``: a string literal on the left needs no type dispatch on itself."""
    blocked = literal in BLOCKED_MEMBERS

    def contains_literal(scope):
        container = right(scope)
        kind = type(container)
        if kind is list:
            return literal in container  # str == only matches str: JSON equality for strings
        if kind is str:
            return literal in container
        if kind is dict and not blocked:
            return literal in container
        try:
            return contains(literal, container)
        except ExprError as exc:
            if exc.span is None:
                exc.span = span
            raise
    return contains_literal


def logical_step(op: str, right: Code, span: Span) -> Callable[[Any, Any], Any]:
    """One ``&&``/``||`` application inside a mixed left spine: ``(left_value, scope) -> bool``."""
    stop = op == "||"

    def step(value, scope):
        if value is not True and value is not False:
            raise ExprError("type", f"'{op}' needs booleans, received {type_name(value)}", span)
        if value is stop:
            return stop
        other = right(scope)
        if other is not True and other is not False:
            raise ExprError("type", f"'{op}' needs booleans, received {type_name(other)}", span)
        return other
    return step
