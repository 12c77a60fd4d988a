"""Editor documentation of the expression builtins: the signature from
:data:`lockgate.dsl.expr.builtins.BUILTINS` (which has no prose of its own) and a one-line
description kept here, the one place completion and hover read it from."""

from __future__ import annotations

from lockgate.dsl.expr.builtins import BUILTINS

DESCRIPTIONS = {
    "len": "Length of a string (UTF-16 units), an array, or an object's key count.",
    "any": "True when any element of the array is truthy (`any([])` is false).",
    "all": "True when every element of the array is truthy (`all([])` is true).",
    "max": "Largest element of a non-empty array of numbers or of strings.",
    "min": "Smallest element of a non-empty array of numbers or of strings.",
    "str": "The value as a string (objects and arrays as compact JSON).",
    "int": "An integer from a boolean, a number (truncated) or a string of digits.",
    "bool": "Truthiness: null, false, 0, '', [] and {} are false; anything else is true.",
    "matches": "Whether the regular expression `re` matches anywhere in `s` (bounded, safe patterns only).",
    "file_exists": "Whether a regular file exists at this workspace-relative path.",
    "file_contains": "Whether the workspace file contains the text.",
}


def names() -> list[str]:
    """The builtin function names, in the expression language's order."""
    return list(BUILTINS)


def signature(name: str) -> str | None:
    """``len(x)``-style signature of a builtin; None for an unknown name."""
    builtin = BUILTINS.get(name)
    return builtin.signature if builtin is not None else None


def description(name: str) -> str:
    """What a builtin does ('' for an unknown name)."""
    return DESCRIPTIONS.get(name, "")


def markdown(name: str) -> str:
    """Hover text of a builtin: its signature as code, then its description."""
    sig = signature(name)
    if sig is None:
        return f"unknown function `{name}`"
    return f"```\n{sig}\n```\n{description(name)}"
