"""The contract type language: ``string``, ``integer[]``, ``low|high``, ``(a|b)[]``, ``Review``,
``string[]?`` (Stratum v1 §2).

:func:`parse_type` turns a field's type string into a small tree of frozen :class:`TypeExpr`
nodes, each with the character ``span`` it came from (so a diagnostic can underline the exact
word) and a :meth:`~TypeExpr.describe` that prints it back in canonical form. Anything outside the
language raises :class:`~lockgate.errors.ContractError` with a span, and common slips (``str``,
``List[str]``, ``string?[]``, ``string|integer``...) get a message that says what to write
instead, with ``replacement`` set for a quick fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Literal

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..errors import ContractError

__all__ = [
    "CONTRACT_NAME",
    "MAX_ARRAY_DEPTH",
    "MAX_TYPE_LENGTH",
    "SCALARS",
    "AnyArray",
    "AnyObject",
    "ArrayOf",
    "Enum",
    "Named",
    "OptionalOf",
    "Scalar",
    "TypeExpr",
    "Unknown",
    "parse_type",
    "strip_optional",
]

Span = tuple[int, int]
ScalarName = Literal["string", "integer", "number", "boolean"]

SCALARS: frozenset[str] = frozenset({"string", "integer", "number", "boolean"})
CONTRACT_NAME = re.compile(r"[A-Z][a-zA-Z0-9_]*")
_TYPE_WORDS = SCALARS | {"object", "array"}
# An enum made only of these is a type union in disguise (`string|integer`, `str|null`).
_UNION_WORDS = _TYPE_WORDS | {"str", "int", "float", "bool", "dict", "list", "null", "none"}
MAX_TYPE_LENGTH = 4096
MAX_ARRAY_DEPTH = 32
_EXPECTED = (
    "expected string, integer, number, boolean, object, array, an enum like low|high, "
    "a contract name like Review, or one of these followed by []"
)


# -- nodes ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TypeExpr:
    """Base of the type nodes. ``span`` is where the node was written; it is not part of
    equality, so ``parse_type("a|b") == parse_type("a|b")`` whatever the offsets."""

    span: Span = field(default=(0, 0), compare=False, repr=False, kw_only=True)

    def describe(self) -> str:
        """The type written back in the contract language (``string[]?``)."""
        raise TypeError(f"{type(self).__name__} does not describe itself")

    @property
    def optional(self) -> bool:
        return False

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True, slots=True)
class Scalar(TypeExpr):
    name: ScalarName

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class AnyObject(TypeExpr):
    """``object``: any map; a reference path may continue through it with any field name."""

    def describe(self) -> str:
        return "object"


@dataclass(frozen=True, slots=True)
class AnyArray(TypeExpr):
    """``array``: any list; a reference path may continue through it with any index."""

    def describe(self) -> str:
        return "array"


@dataclass(frozen=True, slots=True)
class ArrayOf(TypeExpr):
    element: TypeExpr

    def describe(self) -> str:
        inner = self.element.describe()
        return f"({inner})[]" if isinstance(self.element, Enum) else f"{inner}[]"


@dataclass(frozen=True, slots=True)
class Enum(TypeExpr):
    """A string enum; members are kept verbatim (they may contain inner spaces)."""

    members: tuple[str, ...]

    def describe(self) -> str:
        return "|".join(self.members)


@dataclass(frozen=True, slots=True)
class Named(TypeExpr):
    """A reference to another contract of the spec."""

    name: str

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class OptionalOf(TypeExpr):
    """A field type with the trailing ``?``: absent, ``null`` or a value of ``inner``."""

    inner: TypeExpr

    def describe(self) -> str:
        return f"{self.inner.describe()}?"

    @property
    def optional(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class Unknown(TypeExpr):
    """A value of unknown shape: what a path through ``object`` or ``array`` leads to. Never
    produced by :func:`parse_type`."""

    def describe(self) -> str:
        return "any"


def strip_optional(expr: TypeExpr) -> TypeExpr:
    """The type without its optional mark."""
    return expr.inner if isinstance(expr, OptionalOf) else expr


# -- parsing --------------------------------------------------------------------------------------


@cache
def _parser() -> Lark:
    grammar = resources.files("lockgate.dsl").joinpath("grammar/types.lark").read_text("utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)


def parse_type(text: str) -> TypeExpr:
    """Parse one field type string; raise :class:`ContractError` (with a span) when it is not
    in the language. Results are cached by text (the nodes are immutable)."""
    if not isinstance(text, str):
        raise ContractError(f"a field type is a string such as 'string' or 'Review[]', found {type(text).__name__}")
    return _parse(text)


@lru_cache(maxsize=4096)
def _parse(text: str) -> TypeExpr:
    _check_limits(text)
    slip = _whole_text_slip(text)
    if slip is not None:
        raise slip
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc) from None
    return _build(tree, text)


def _check_limits(text: str) -> None:
    if len(text) > MAX_TYPE_LENGTH:
        raise ContractError(f"a type is at most {MAX_TYPE_LENGTH} characters; this one has {len(text)}", (0, len(text)))
    if text.count("[]") > MAX_ARRAY_DEPTH:
        raise ContractError(f"arrays nest at most {MAX_ARRAY_DEPTH} deep", (0, len(text)))


def _clip(text: str, limit: int = 40) -> str:
    """``text`` shortened for a message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _quoted(text: str) -> str:
    return repr(_clip(text))


def _build(tree: Tree[Token], text: str) -> TypeExpr:
    body = _node(tree.children[0], text)  # type: ignore[arg-type]
    if len(tree.children) == 2:
        return OptionalOf(body, span=(0, len(text)))
    return body


#: The grammar's named nodes, each built by one branch of :func:`_node`.
NODES = frozenset({"atom", "enum", "group", "array"})


def _node(node: Tree[Token], text: str) -> TypeExpr:
    kind = node.data
    span = (node.meta.start_pos, node.meta.end_pos)
    tokens = [t for t in node.children if isinstance(t, Token) and t.type == "ATOM"]
    if kind == "atom":
        return _word(tokens[0])
    if kind in ("enum", "group"):
        return Enum(_members(tokens, span), span=span)
    assert kind == "array", kind
    element = _node(node.children[0], text)  # type: ignore[arg-type]
    return ArrayOf(element, span=span)


def _word(token: Token) -> TypeExpr:
    word = str(token)
    span = (token.start_pos or 0, token.end_pos or 0)
    if word in SCALARS:
        return Scalar(word, span=span)  # type: ignore[arg-type]
    if word == "object":
        return AnyObject(span=span)
    if word == "array":
        return AnyArray(span=span)
    if CONTRACT_NAME.fullmatch(word):
        return Named(word, span=span)
    raise _word_error(word, span)


def _members(tokens: list[Token], span: Span) -> tuple[str, ...]:
    members = tuple(str(t) for t in tokens)
    stripped = tuple(m.strip() for m in members)
    if all(m.lower() in _UNION_WORDS for m in stripped):
        raise _union_error(stripped, span)
    if stripped != members:
        fixed = "|".join(stripped)
        raise ContractError(
            f"enum members have spaces around them ({_clip(', '.join(repr(m) for m in members))}); "
            f"write {_clip(fixed)}",
            span,
            replacement=fixed,
        )
    return members


# -- friendly errors ------------------------------------------------------------------------------

_WORD_SLIPS: dict[str, str] = {
    "str": "string", "text": "string", "char": "string", "varchar": "string",
    "int": "integer", "long": "integer", "i32": "integer", "i64": "integer",
    "float": "number", "double": "number", "decimal": "number", "f64": "number", "real": "number",
    "bool": "boolean",
    "list": "array", "tuple": "array", "set": "array",
    "dict": "object", "map": "object", "json": "object", "record": "object", "any": "object",
}
_STRING_LIKE = frozenset({"date", "datetime", "time", "timestamp", "uuid", "url", "uri", "email", "path"})
_GENERIC = re.compile(r"\s*([A-Za-z_]\w*)\s*\[\s*([A-Za-z_]\w*)\s*\]\s*(\??)\s*")


def _word_error(word: str, span: Span) -> ContractError:
    """Why ``word`` is not a type, and what to write instead."""
    bare = word.strip()
    if bare != word and (bare in _TYPE_WORDS or CONTRACT_NAME.fullmatch(bare)):
        return ContractError(f"unexpected spaces around {_quoted(bare)}; write {bare}", span, replacement=bare)
    if not bare:
        return ContractError(f"empty type; {_EXPECTED}", span)
    lower = bare.lower()
    if lower in _WORD_SLIPS:
        fix = _WORD_SLIPS[lower]
        return ContractError(f"unknown type {_quoted(bare)}; did you mean {fix!r}?", span, replacement=fix)
    if lower in _STRING_LIKE:
        return ContractError(
            f"there is no {_quoted(bare)} type; use string (for example an ISO 8601 text)", span, replacement="string"
        )
    if lower in ("null", "none", "nil", "undefined"):
        return ContractError(
            f"there is no {_quoted(bare)} type; mark an optional field with a trailing ? (e.g. string?)", span
        )
    if re.fullmatch(r"[a-z_][a-zA-Z0-9_]*", bare):
        fix = bare[0].upper() + bare[1:]
        fix = fix if CONTRACT_NAME.fullmatch(fix) else fix.lstrip("_")
        return ContractError(
            f"unknown type {_quoted(bare)}; contract references start with an uppercase letter (like {fix}), "
            f"and the built-in types are string, integer, number, boolean, object and array",
            span,
            replacement=fix if CONTRACT_NAME.fullmatch(fix) else None,
        )
    return ContractError(f"{_quoted(bare)} is not a type; {_EXPECTED}", span)


def _union_error(members: tuple[str, ...], span: Span) -> ContractError:
    others = [m for m in members if m.lower() not in ("null", "none")]
    fix = f"{others[0]}?" if len(others) == 1 and others[0] in _TYPE_WORDS else None
    hint = f"; write {fix}" if fix else "; pick one type, or use a string enum like low|high"
    return ContractError(
        f"unions of types are not supported ({_clip('|'.join(members))}): `a|b` is a string enum{hint}",
        span,
        replacement=fix,
    )


def _whole_text_slip(text: str) -> ContractError | None:
    """Slips that are easiest to recognise on the whole string, before the grammar sees it."""
    whole = (0, len(text))
    if not text.strip(" ?"):
        return ContractError(f"empty type; {_EXPECTED}", whole)
    generic = _GENERIC.fullmatch(text)
    if generic:
        return _generic_error(generic, whole)
    return None


def _generic_error(match: re.Match[str], span: Span) -> ContractError:
    outer, inner, question = match.group(1), match.group(2), match.group(3)
    inner_fix = _WORD_SLIPS.get(inner.lower(), inner)
    if outer.lower() == "optional":
        fix = f"{inner_fix}?"
        return ContractError(f"write {fix} for an optional field, not {outer}[{inner}]", span, replacement=fix)
    fix = f"{inner_fix}[]{question}"
    return ContractError(f"write {fix} for an array of {inner_fix}, not {match.group(0).strip()}", span, replacement=fix)


def _syntax_error(text: str, exc: UnexpectedInput) -> ContractError:
    pos = _error_pos(text, exc)
    for check in (_double_optional, _optional_element, _bare_group, _empty_member, _missing_element):
        found = check(text, pos)
        if found is not None:
            return found
    char = text[pos] if pos < len(text) else ""
    where = f"unexpected {char!r}" if char else "unexpected end"
    return ContractError(f"{where} in type {_quoted(text)}; {_EXPECTED}", (pos, min(pos + 1, len(text))) if char else (pos, pos))


def _error_pos(text: str, exc: UnexpectedInput) -> int:
    if isinstance(exc, UnexpectedToken):
        if exc.token.type == "$END":
            return len(text)
        return exc.token.start_pos or 0
    if isinstance(exc, UnexpectedCharacters):
        return exc.pos_in_stream
    if isinstance(exc, UnexpectedEOF):
        return len(text)
    return 0


def _double_optional(text: str, pos: int) -> ContractError | None:
    if text.endswith("??"):
        start = len(text.rstrip("?"))
        return ContractError("a single trailing ? marks an optional field; ?? is not allowed", (start, len(text)), replacement="?")
    return None


def _optional_element(text: str, pos: int) -> ContractError | None:
    match = re.fullmatch(r"(.*?)\?((?:\[\])+)(\??)", text)
    if match:
        fix = f"{match.group(1)}{match.group(2)}?"
        return ContractError(
            f"an array element cannot be optional; write {_clip(fix)} for an optional array",
            (0, len(text)),
            replacement=fix,
        )
    return None


def _bare_group(text: str, pos: int) -> ContractError | None:
    match = re.fullmatch(r"\(([^()]*)\)(\??)", text)
    if match:
        fix = match.group(1) + match.group(2)
        return ContractError(
            f"parentheses are only for enum arrays like ({_clip(match.group(1))})[]; "
            f"a plain enum is written {_clip(fix)}",
            (0, len(text)),
            replacement=fix,
        )
    return None


def _empty_member(text: str, pos: int) -> ContractError | None:
    for at, char in enumerate(text):
        if char != "|":
            continue
        before = text[at - 1] if at else ""
        after = text[at + 1] if at + 1 < len(text) else ""
        if before in ("", "|", "(") or after in ("", "|", ")"):
            return ContractError("an enum member is empty; members are separated by a single |", (at, at + 1))
    return None


def _missing_element(text: str, pos: int) -> ContractError | None:
    if text.startswith("[]", pos) and (pos == 0 or text[pos - 1] in "|("):
        return ContractError("[] needs an element type before it, like string[]", (pos, pos + 2))
    return None
