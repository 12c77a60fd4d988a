"""Closures fused with a one-member path operand, the commonest shape of an ``ensure``.

``result.score >= 0.8`` or ``len(result.items) > 0`` would cost one closure call for the
comparison and one for ``result.score``. Here the read is inlined as ``scope[name][key]``; any
failure (binding not loaded yet, not an object, missing key) falls back to ``read``, the path's
ordinary closure, which loads, validates and explains exactly as it always does.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ...errors import ExprError
from .jsonvalues import type_name, utf16_len

Code = Callable[[Any], Any]
Span = tuple[int, int]
_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def order_number(op: str, name: str, key: str, read: Code, literal: float, span: Span) -> Code:
    """``binding.key <op> number``."""
    compare = _ORDER[op]

    def fused(scope):
        try:
            value = scope[name][key]
        except (KeyError, TypeError):
            value = read(scope)
        kind = type(value)
        if kind is int or kind is float:
            return compare(value, literal)
        raise ExprError("type", f"'{op}' needs two numbers or two strings, received "
                        f"{type_name(value)} and number", span)
    return fused


def equal_literal(positive: bool, name: str, key: str, read: Code, literal: Any) -> Code:
    """``binding.key == literal`` (or ``!=``) for a number, string, boolean or null literal."""
    kind = type(literal)
    numeric = kind is int or kind is float

    def fused(scope):
        try:
            value = scope[name][key]
        except (KeyError, TypeError):
            value = read(scope)
        found = type(value)
        if numeric:
            same = (found is int or found is float) and value == literal
        else:
            same = found is kind and value == literal
        return same is positive
    return fused


def length(name: str, key: str, read: Code, span: Span) -> Code:
    """``len(binding.key)``."""
    def fused(scope):
        try:
            value = scope[name][key]
        except (KeyError, TypeError):
            value = read(scope)
        kind = type(value)
        if kind is list or kind is dict:
            return len(value)
        if kind is str:
            return len(value) if value.isascii() else utf16_len(value)
        raise ExprError("type", f"len() needs a string, array or object, received {type_name(value)}", span)
    return fused
