"""What to say about a name the language does not know: a binding or a function."""

from __future__ import annotations

import difflib

from .builtins import BUILTINS
from .messages import clipped
from .scope import BINDING_NAMES

_LITERAL_SLIPS = {"True": "true", "False": "false", "None": "null", "TRUE": "true",
                  "FALSE": "false", "NULL": "null", "undefined": "null", "nil": "null"}
_OPERATOR_SLIPS = {"and": "&&", "or": "||", "not": "!"}
_FUNCTION_SLIPS = {
    "length": "len(x)", "size": "len(x)", "count": "len(x)", "contains": "'x in y'",
    "includes": "'x in y'", "startswith": "matches(s, '^prefix')",
    "startsWith": "matches(s, '^prefix')", "endswith": "matches(s, 'suffix$')",
    "endsWith": "matches(s, 'suffix$')", "regex": "matches(s, re)", "match": "matches(s, re)",
    "test": "matches(s, re)", "exists": "file_exists(path)", "string": "str(x)",
    "toString": "str(x)", "number": "int(x)", "parseInt": "int(x)", "float": "int(x) or arithmetic",
    "not": "'!x'", "some": "any(a)", "every": "all(a)",
}


def unknown_identifier_message(name: str) -> str:
    allowed = ", ".join(sorted(BINDING_NAMES))
    shown = clipped(name)
    if name in _LITERAL_SLIPS:
        return f"unknown identifier '{name}': JSON literals are lowercase, write {_LITERAL_SLIPS[name]}"
    if name in _OPERATOR_SLIPS:
        return f"unknown identifier '{name}': use the operator '{_OPERATOR_SLIPS[name]}'"
    close = difflib.get_close_matches(name, sorted(BINDING_NAMES), n=1, cutoff=0.75)
    if close:
        return f"unknown identifier '{shown}': did you mean '{close[0]}'?"
    return (f"unknown identifier '{shown}': expressions read only {allowed} "
            "(another step's output is result.<step> in when/set)")


def unknown_function_message(name: str) -> str:
    if name in _FUNCTION_SLIPS:
        return f"unknown function '{name}': use {_FUNCTION_SLIPS[name]}"
    close = difflib.get_close_matches(name, sorted(BUILTINS), n=1, cutoff=0.6)
    if close:
        return f"unknown function '{clipped(name)}': did you mean '{close[0]}'?"
    return f"unknown function '{clipped(name)}': the builtins are {', '.join(BUILTINS)}"
