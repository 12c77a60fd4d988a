"""Closures for builtin calls: ``len``/``all``/``any`` inline, ``matches`` with a literal
pattern compiled once, the file predicates with the scope's workspace, and the generic case.

An ``ExprError`` raised without a span by a builtin receives the call's span.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ...errors import ExprError
from .builtins import check_match_args
from .jsonvalues import truthy, type_name, utf16_len
from .limits import MAX_MATCH_INPUT_LENGTH
from .regex_safety import compile_pattern, search

Code = Callable[[Any], Any]
Span = tuple[int, int]


def with_span(exc: ExprError, span: Span) -> ExprError:
    """``exc``, given ``span`` unless an inner node already located it."""
    if exc.span is None:
        exc.span = span
    return exc


def generic_call(function: Callable[..., Any], args: tuple[Code, ...], span: Span) -> Code:
    if len(args) == 1:
        (arg,) = args

        def call1(scope):
            value = arg(scope)
            try:
                return function(value)
            except ExprError as exc:
                raise with_span(exc, span)
        return call1
    first, second = args

    def call2(scope):
        a, b = first(scope), second(scope)
        try:
            return function(a, b)
        except ExprError as exc:
            raise with_span(exc, span)
    return call2


def length_call(arg: Code, span: Span) -> Code:
    def length(scope):
        value = arg(scope)
        kind = type(value)
        if kind is list or kind is dict:
            return len(value)
        if kind is str:
            return len(value) if value.isascii() else utf16_len(value)
        raise ExprError("type", f"len() needs a string, array or object, received {type_name(value)}", span)
    return length


def all_call(arg: Code, span: Span) -> Code:
    def every(scope):
        items = arg(scope)
        if type(items) is not list:
            raise ExprError("type", f"all() needs an array, received {type_name(items)}", span)
        for item in items:
            if item is not True and (item is False or not truthy(item)):
                return False
        return True
    return every


def any_call(arg: Code, span: Span) -> Code:
    def some(scope):
        items = arg(scope)
        if type(items) is not list:
            raise ExprError("type", f"any() needs an array, received {type_name(items)}", span)
        for item in items:
            if item is True or (item is not False and truthy(item)):
                return True
        return False
    return some


INLINE = {"len": length_call, "all": all_call, "any": any_call}


def workspace_call(function: Callable[..., Any], args: tuple[Code, ...], span: Span) -> Code:
    def call(scope):
        values = [arg(scope) for arg in args]
        try:
            return function(scope.workspace, *values)
        except ExprError as exc:
            raise with_span(exc, span)
    return call


def matches_literal(subject: Code, pattern: Any, span: Span) -> Code:
    """``matches(s, "literal")``: the pattern is filtered and compiled once, errors kept for later."""
    compiled, error = None, None
    try:
        check_match_args("", pattern)
        compiled = compile_pattern(pattern)
    except ExprError as exc:
        error = exc

    if error is None and type(compiled) is re.Pattern:
        find = compiled.search

        def matches_fast(scope):
            value = subject(scope)
            # within the input limit for sure: <= 2048 code points, or ASCII up to 4096
            if type(value) is str and (len(value) <= MAX_MATCH_INPUT_LENGTH // 2 or (
                    value.isascii() and len(value) <= MAX_MATCH_INPUT_LENGTH)):
                return find(value) is not None
            return careful(value)
        matches = matches_fast
    else:
        def matches(scope):
            return careful(subject(scope))

    def careful(value):
        try:
            check_match_args(value, pattern)
            if error is not None:
                raise ExprError(error.kind, error.message)
            return search(compiled, value)
        except ExprError as exc:
            raise with_span(exc, span)
    return matches
