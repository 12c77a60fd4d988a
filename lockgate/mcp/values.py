"""Argument values JSON cannot carry faithfully: NaN and ±Infinity, and strings with lone surrogates.

The transport's JSON parser accepts ``NaN``/``Infinity`` literals, and an in-process caller can
pass any Python float or string; the run store keeps strict JSON (and UTF-8), so such a value
would otherwise fail deep in the engine as a misleading ``store_error``. The server refuses them
up front, naming where each is, as invalid arguments.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

MAX_REPORTED = 10
_SURROGATE = re.compile("[\ud800-\udfff]")


def unrepresentable(arguments: Mapping[str, Any]) -> list[str]:
    """One problem per offending value (at most MAX_REPORTED), each naming its argument path."""
    if _plain(arguments):
        return []
    problems: list[str] = []
    # (path, value); a path is (parent path, key or index), formatted only for a problem
    stack: list[tuple[Any, Any]] = [((None, key), value) for key, value in reversed(list(arguments.items()))]
    while stack and len(problems) < MAX_REPORTED:
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(f"argument {_where(path)} is {value!r}, which JSON cannot carry; give a finite "
                            "number or null")
        elif isinstance(value, str) and _SURROGATE.search(value):
            problems.append(f"argument {_where(path)} holds a lone UTF-16 surrogate; give valid Unicode text")
        elif isinstance(value, Mapping):
            for key, item in reversed(list(value.items())):
                if isinstance(key, str) and _SURROGATE.search(key):
                    problems.append(f"argument {_where(path)} has a key with a lone UTF-16 surrogate; give "
                                    "valid Unicode text")
                stack.append(((path, key), item))
        elif isinstance(value, (list, tuple)):
            stack.extend(((path, i), item) for i, item in reversed(list(enumerate(value))))
    return problems[:MAX_REPORTED]


def _plain(arguments: Mapping[str, Any]) -> bool:
    """True when strict JSON encodes the arguments as UTF-8: the common case, checked by the C
    encoder (about 3 times faster than the walk that finds where a problem is)."""
    try:
        json.dumps(arguments, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, TypeError, RecursionError):
        return False
    return True


def _where(path: Any) -> str:
    """``result.items[2].name`` for a path (lone surrogates in keys written as ``\\uXXXX``)."""
    parts: list[str] = []
    while path is not None:
        path, key = path
        parts.append(f"[{key}]" if isinstance(key, int) else f".{_SURROGATE.sub(_escape, str(key))}")
    return "".join(reversed(parts)).lstrip(".")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"
