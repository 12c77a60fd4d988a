"""The expression AST: small frozen nodes, each with its character span in the source.

Spans are ``(start, end)`` offsets into the expression text (code points, end exclusive).
``size`` counts the syntax nodes of the subtree the way the node limit does (a parenthesised
group is not a node) and ``depth`` is the nesting depth the depth limit measures (each group,
unary operator and call argument adds one level). Both are filled in by the parser.

Trees can be deep along their left spine (``1 + 1 + ... + 1``), so :func:`walk` is iterative;
do not recurse over a tree without bounding the recursion.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

Span = tuple[int, int]
JsonScalar = str | int | float | bool | None


@dataclass(frozen=True, slots=True, eq=False)
class Literal:
    """A string, number, ``true``, ``false`` or ``null`` literal."""

    value: JsonScalar
    span: Span
    size: int = field(default=1, repr=False)
    depth: int = field(default=0, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Identifier:
    """A bare name: one of the bindings ``result``, ``input``, ``item``, ``prev``."""

    name: str
    span: Span
    size: int = field(default=1, repr=False)
    depth: int = field(default=0, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Member:
    """``target.name``: an own key of a JSON object."""

    target: Node
    name: str
    span: Span
    name_span: Span
    size: int = field(default=1, repr=False)
    depth: int = field(default=0, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Index:
    """``target[n]`` with a non-negative integer literal ``n``."""

    target: Node
    index: int
    span: Span
    index_span: Span
    size: int = field(default=1, repr=False)
    depth: int = field(default=0, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class FunctionCall:
    """``name(args...)``: a builtin called on a bare name (no methods exist)."""

    name: str
    args: tuple[Node, ...]
    span: Span
    name_span: Span
    size: int = field(default=1, repr=False)
    depth: int = field(default=0, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Unary:
    """``!operand`` or ``-operand``."""

    op: str
    operand: Node
    span: Span
    size: int = field(default=1, repr=False)
    depth: int = field(default=0, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Binary:
    """``left op right`` for every binary operator, ``&&``/``||`` and ``in`` included."""

    op: str
    left: Node
    right: Node
    span: Span
    op_span: Span
    size: int = field(default=1, repr=False)
    depth: int = field(default=0, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Group:
    """``( inner )``: kept for spans and depth; evaluation sees straight through it."""

    inner: Node
    span: Span
    size: int = field(default=0, repr=False)
    depth: int = field(default=0, repr=False)


Node = Literal | Identifier | Member | Index | FunctionCall | Unary | Binary | Group


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-expressions of ``node``, left to right."""
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, (Member, Index)):
        return (node.target,)
    if isinstance(node, FunctionCall):
        return node.args
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Group):
        return (node.inner,)
    return ()


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree in source order (pre-order), without recursion."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def unwrap(node: Node) -> Node:
    """``node`` with any enclosing parentheses removed."""
    while isinstance(node, Group):
        node = node.inner
    return node
