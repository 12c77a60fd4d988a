"""Expression text -> AST, through the Lark grammar ``grammar/expr.lark``.

The LALR parser calls :class:`_Builder` on every reduction, so the tree is built bottom-up without
recursion and the node and depth limits are enforced as soon as a node would break them. While
tokens are fed, :func:`parse` also watches the parser stack and the number of value tokens, so
huge inputs (a megabyte of ``(`` or ``!``) fail fast with ``resource_limit`` instead of being
parsed to the end. Lark's errors are turned into friendly messages by :mod:`.messages`.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from importlib import resources

from lark import Lark, Token, Transformer
from lark.exceptions import (
    LarkError,
    UnexpectedInput,
)

from ...errors import ExprError
from . import messages
from .limits import MAX_DEPTH, MAX_NODES
from .nodes import (
    Binary,
    FunctionCall,
    Group,
    Identifier,
    Index,
    Literal,
    Member,
    Node,
    Unary,
)

BLOCKED_MEMBERS = frozenset({"__proto__", "constructor", "prototype"})

_VALUE_TOKENS = frozenset({"NAME", "NUMBER", "STRING", "TRUE", "FALSE", "NULL"})
# One nesting level holds at most a partial operand and operator per precedence level plus the
# tokens that open it (`name ( args ,`); a stack taller than this proves the depth limit is broken.
_STACK_PER_LEVEL = 16
_MAX_STACK = _STACK_PER_LEVEL * (MAX_DEPTH + 2)
_MAX_SAFE_INTEGER = 2**53
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))")
_SIMPLE_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t"}


def parse(source: str) -> Node:
    """Parse ``source`` into an AST; raises ``ExprError`` (``parse`` or ``resource_limit``)."""
    try:
        return _parse(source)
    except ExprError as error:
        raise _with_sound_fix(source, error) from None


def _parse(source: str) -> Node:
    if not isinstance(source, str):
        raise ExprError("parse", f"an expression must be a string, not {type(source).__name__}")
    feed = _Feed(source)
    try:
        return feed.run()
    except ExprError:
        raise
    except UnexpectedInput as exc:
        raise messages.explain(source, exc, feed.seen, feed.open_brackets) from None
    except (LarkError, RecursionError, MemoryError) as exc:
        raise ExprError("parse", f"the expression could not be parsed ({type(exc).__name__})",
                        None) from exc


def _with_sound_fix(source: str, error: ExprError) -> ExprError:
    """``error``, without its quick fix unless applying it mends that place: the fixed text
    parses, or its first error lies beyond the fix (a later slip of its own). A slip beside
    another (``x >= = 1``) gets none: a fix must not lead to a new error where it was made."""
    if error.replacement is None or error.span is None:
        return error
    start, end = error.span
    try:
        _parse(source[:start] + error.replacement + source[end:])
    except ExprError as after:
        if after.span is None or after.span[0] < start + len(error.replacement):
            return ExprError(error.kind, error.message, error.span)
    return error


class _Feed:
    """One parse: feeds tokens, tracks brackets and history for messages, bounds the work."""

    __slots__ = ("open_brackets", "seen", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.seen: list[Token] = []
        self.open_brackets: list[Token] = []

    def run(self) -> Node:
        interactive = _parser().parse_interactive(self.source)
        stack = interactive.parser_state.value_stack
        values = 0
        last = None
        for token in interactive.iter_parse():
            self._track(token)
            last = token
            if token.type in _VALUE_TOKENS:
                values += 1
                if values > MAX_NODES:
                    raise _too_many_nodes((token.start_pos, token.end_pos))
            if len(stack) > _MAX_STACK:
                raise _too_deep((token.start_pos, token.end_pos))
        if last is None:
            raise ExprError("parse", "the expression is empty", (0, len(self.source)))
        return interactive.feed_eof(last)

    def _track(self, token: Token) -> None:
        seen = self.seen
        seen.append(token)
        if len(seen) > 4:
            del seen[0]
        if token.type in ("LPAR", "LSQB"):
            self.open_brackets.append(token)
        elif token.type in ("RPAR", "RSQB") and self.open_brackets:
            self.open_brackets.pop()


def _too_many_nodes(span: tuple[int, int]) -> ExprError:
    return ExprError("resource_limit", f"the expression has more than {MAX_NODES} syntax nodes", span)


def _too_deep(span: tuple[int, int]) -> ExprError:
    return ExprError("resource_limit", f"the expression is nested more than {MAX_DEPTH} levels deep", span)


def _span(token: Token) -> tuple[int, int]:
    return (token.start_pos, token.end_pos)


def _checked(node: Node) -> Node:
    if node.size > MAX_NODES:
        raise _too_many_nodes(node.span)
    if node.depth > MAX_DEPTH:
        raise _too_deep(node.span)
    return node


class _Builder(Transformer):
    """One method per grammar alias; each returns a node with its span, size and depth."""

    def binary(self, c):
        left, op, right = c
        return _checked(Binary(op.value, left, right, (left.span[0], right.span[1]), _span(op),
                               size=left.size + right.size + 1, depth=max(left.depth, right.depth)))

    def unary(self, c):
        op, operand = c
        return _checked(Unary(op.value, operand, (op.start_pos, operand.span[1]),
                              size=operand.size + 1, depth=operand.depth + 1))

    def member(self, c):
        target, _dot, name = c
        if name.value in BLOCKED_MEMBERS:
            raise ExprError("parse", f"access to the member '{name.value}' is not allowed", _span(name))
        return _checked(Member(target, name.value, (target.span[0], name.end_pos), _span(name),
                               size=target.size + 1, depth=target.depth))

    def index(self, c):
        target, _open, number, close = c
        if not number.value.isdigit():
            raise ExprError("parse", f"an index must be a non-negative integer literal such as [0], "
                            f"not [{number.value}]", _span(number))
        return _checked(Index(target, _index(number.value), (target.span[0], close.end_pos), _span(number),
                              size=target.size + 1, depth=target.depth))

    def call(self, c):
        name, _open, args, close = c
        args = tuple(args or ())
        return _checked(FunctionCall(name.value, args, (name.start_pos, close.end_pos), _span(name),
                                     size=1 + sum(a.size for a in args),
                                     depth=max((a.depth + 1 for a in args), default=0)))

    def arguments(self, c):
        return c

    def group(self, c):
        _open, inner, close = c
        return _checked(Group(inner, (_open.start_pos, close.end_pos), size=inner.size,
                              depth=inner.depth + 1))

    def identifier(self, c):
        (name,) = c
        return Identifier(name.value, _span(name))

    def number(self, c):
        (token,) = c
        return Literal(_number(token), _span(token))

    def string(self, c):
        (token,) = c
        return Literal(_unescape(token.value[1:-1]), _span(token))

    def true(self, c):
        return Literal(True, _span(c[0]))

    def false(self, c):
        return Literal(False, _span(c[0]))

    def null(self, c):
        return Literal(None, _span(c[0]))


def _index(digits: str) -> int:
    """An index literal's value; one of 20+ digits is past any array's end whatever its value,
    and Python refuses to convert more than 4300 digits, so such an index is capped."""
    return int(digits) if len(digits) < 20 else 10**20


def _number(token: Token) -> int | float:
    """A JS double; integral values within 2**53 become ``int`` so they print and compare exactly."""
    value = float(token.value)
    if not math.isfinite(value):
        raise ExprError("parse", f"the number {_shown_number(token.value)} is out of range", _span(token))
    if value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
        return int(value)
    return value


def _shown_number(text: str) -> str:
    """A number literal as a message shows it: whole, or cut with its length when it is long
    (a literal of 100,000 digits is all in the excerpt already), as LG109 shows one in YAML."""
    if len(text) <= 40:
        return text
    unit = "digits" if text.isdigit() else "characters"
    return f"{text[:20]}... ({len(text):,} {unit})"


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    text = _ESCAPE.sub(lambda m: chr(int(m[1], 16)) if m[1] else _SIMPLE_ESCAPES[m[2]], body)
    if "\\u" in body:  # \uD83D\uDE00 is one code point in JS: join surrogate pairs
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return text


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("lockgate.dsl").joinpath("grammar/expr.lark").read_text("utf-8")
    return Lark(grammar, parser="lalr", lexer="basic", transformer=_Builder(),
                maybe_placeholders=True)
