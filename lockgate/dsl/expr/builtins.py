"""The builtin functions (reference §5.6), over already-evaluated JSON values.

Each takes its argument values and raises ``ExprError`` without a span; the compiler attaches
the call's span. Arity is checked by the compiler (a wrong arity is a ``type`` error).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import ExprError
from . import jail, regex_safety
from .jsonvalues import (
    js_string,
    normalize_number,
    truthy,
    type_name,
    utf16_key,
    utf16_len,
)
from .limits import MAX_MATCH_INPUT_LENGTH, MAX_PATTERN_LENGTH

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+\Z")
_MAX_SAFE_INTEGER = 2**53


def _type_error(message: str) -> ExprError:
    return ExprError("type", message)


def builtin_len(value: Any) -> int:
    kind = type(value)
    if kind is str:
        return utf16_len(value)
    if kind is list or kind is dict:
        return len(value)
    raise _type_error(f"len() needs a string, array or object, received {type_name(value)}")


def _array(name: str, value: Any) -> list[Any]:
    if type(value) is not list:
        raise _type_error(f"{name}() needs an array, received {type_name(value)}")
    return value


def builtin_any(value: Any) -> bool:
    return any(truthy(item) for item in _array("any", value))


def builtin_all(value: Any) -> bool:
    return all(truthy(item) for item in _array("all", value))


def _extreme(name: str, value: Any, pick: Callable[..., Any]) -> Any:
    items = _array(name, value)
    if not items:
        raise _type_error(f"{name}() of an empty array")
    if all(type(item) is int or type(item) is float for item in items):
        return pick(items)
    if all(type(item) is str for item in items):
        if all(item.isascii() for item in items):
            return pick(items)
        return pick(items, key=utf16_key)
    raise _type_error(f"{name}() needs an array of all numbers or all strings")


def builtin_max(value: Any) -> Any:
    return _extreme("max", value, max)


def builtin_min(value: Any) -> Any:
    return _extreme("min", value, min)


def builtin_str(value: Any) -> str:
    return js_string(value)


def builtin_int(value: Any) -> int | float:
    kind = type(value)
    if kind is bool:
        return 1 if value else 0
    if kind is int:
        return value
    if kind is float:
        return int(value) if abs(value) < _MAX_SAFE_INTEGER else value  # trunc toward zero
    if kind is str and _INTEGER_TEXT.match(value):
        return _integer_text(value)
    if kind is str:
        raise _type_error(f"int() cannot convert the string {value[:40]!r}")
    raise _type_error(f"int() needs a boolean, number or integer string, received {type_name(value)}")


def _integer_text(text: str) -> int | float:
    if len(text) <= 300:  # below 1e300: always a finite double
        return normalize_number(int(text))
    value = float(text)  # beyond Python's int-from-str limit a double is what JS gets anyway
    if math.isinf(value):
        raise _type_error("int() result is not a finite number")
    return normalize_number(value)


def builtin_bool(value: Any) -> bool:
    return truthy(value)


def check_match_args(subject: Any, pattern: Any) -> None:
    """The checks before the safety filter, in the reference's order."""
    if type(subject) is not str or type(pattern) is not str:
        raise _type_error(f"matches() needs two strings, received {type_name(subject)} "
                          f"and {type_name(pattern)}")
    if utf16_len(pattern) > MAX_PATTERN_LENGTH:
        raise ExprError("resource_limit", f"the regex is longer than {MAX_PATTERN_LENGTH} characters")
    if utf16_len(subject) > MAX_MATCH_INPUT_LENGTH:
        raise ExprError("resource_limit",
                        f"matches() input is longer than {MAX_MATCH_INPUT_LENGTH} characters")


def builtin_matches(subject: Any, pattern: Any) -> bool:
    check_match_args(subject, pattern)
    return regex_safety.search(regex_safety.compile_pattern(pattern), subject)


def _path(name: str, value: Any) -> str:
    if type(value) is not str:
        raise _type_error(f"{name}() needs a string path, received {type_name(value)}")
    return value


def builtin_file_exists(workspace: Any, path: Any) -> bool:
    return jail.file_exists(workspace, _path("file_exists", path))


def builtin_file_contains(workspace: Any, path: Any, needle: Any) -> bool:
    if type(needle) is not str:
        raise _type_error(f"file_contains() needs a string to search for, received {type_name(needle)}")
    return jail.file_contains(workspace, _path("file_contains", path), needle)


@dataclass(frozen=True, slots=True)
class Builtin:
    name: str
    arity: int
    function: Callable[..., Any]
    needs_workspace: bool = False

    @property
    def signature(self) -> str:
        params = {"matches": "s, re", "file_contains": "path, text", "file_exists": "path"}
        default = "a" if self.name in ("any", "all", "max", "min") else "x"
        return f"{self.name}({params.get(self.name, default)})"


BUILTINS: dict[str, Builtin] = {b.name: b for b in (
    Builtin("len", 1, builtin_len),
    Builtin("any", 1, builtin_any),
    Builtin("all", 1, builtin_all),
    Builtin("max", 1, builtin_max),
    Builtin("min", 1, builtin_min),
    Builtin("str", 1, builtin_str),
    Builtin("int", 1, builtin_int),
    Builtin("bool", 1, builtin_bool),
    Builtin("matches", 2, builtin_matches),
    Builtin("file_exists", 1, builtin_file_exists, needs_workspace=True),
    Builtin("file_contains", 2, builtin_file_contains, needs_workspace=True),
)}


def arity_error(builtin: Builtin, given: int) -> ExprError:
    plural = "argument" if builtin.arity == 1 else "arguments"
    return _type_error(f"{builtin.name}() takes exactly {builtin.arity} {plural} ({given} given); "
                       f"usage: {builtin.signature}")
