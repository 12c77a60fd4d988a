"""The syntax of one ``${...}`` reference (Stratum v1 §3.1): reading it and writing it.

Reading is the non-nested finding rule ``\\$\\{([^}]*)\\}`` and the Lark parser of
``grammar/template.lark`` for the text inside; writing is the canonical spelling
(``build.output.items[0]``). Scanning builds references from these, and the slip messages
check their suggested fixes against the same parser, so both live below them here.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from importlib import resources
from typing import Literal

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

Span = tuple[int, int]
PathPart = str | int
RefKind = Literal["input", "step", "carry", "item", "prev"]

_REF = re.compile(r"\$\{([^}]*)\}")


def format_path(path: tuple[PathPart, ...]) -> str:
    """``("a", 0, "b")`` -> ``.a[0].b``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _inner(kind: str, name: str | None, path: tuple[PathPart, ...]) -> str:
    if kind in ("item", "prev"):
        return kind + format_path(path)
    if kind == "input":
        return "input" + format_path(path)
    if kind == "step":
        return f"{name}.output{format_path(path)}"
    return f"{name}{format_path(path)}"


@cache
def _parser() -> Lark:
    grammar = resources.files("lockgate.dsl").joinpath("grammar/template.lark").read_text("utf-8")
    return Lark(grammar, parser="lalr")


@lru_cache(maxsize=8192)
def _parse_inner(inner: str) -> Tree[Token] | UnexpectedInput:
    """The parse of one reference's inner text, or the parse error; cached by text, since a
    spec repeats the same few references in many strings (positions are relative to ``inner``)."""
    try:
        return _parser().parse(inner)
    except UnexpectedInput as exc:
        return exc


def _parses(inner: str) -> bool:
    try:
        _parser().parse(inner)
    except UnexpectedInput:
        return False
    return True
