"""Static type errors: sub-expressions that raise the evaluator's ``type`` error whatever
value the contracts allow (``result.score >= "high"`` for ``score: number``).

A conservative inference over the AST: each node gets the JSON kind it is certain to have
(``number``, ``string``, ``boolean``, ``array``, ``object``, ``null``) or None when that is not
known. Kinds come from literals, from member chains a ``typer`` can type (a contract field that
is not optional), and from the result kinds of builtins and operators. An error is reported only
where the evaluator's own rules (:mod:`.operators`, :mod:`.builtins`) reject every value of the
known kinds, and only where the node is certain to run whenever the expression is evaluated
(never the right side of ``&&``/``||``). Constant sub-expressions are left to :mod:`.folding`, and a node
whose child already fails gets no kind, so one mistake is reported once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ...errors import ExprError
from ..types import AnyArray, AnyObject, ArrayOf, Enum, Named, Scalar, TypeExpr
from .folding import Folder
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
    unwrap,
    walk,
)

Kind = str | None
Typer = Callable[[str, tuple[str | int, ...]], TypeExpr | None]

_ANY = None  # an argument the builtin accepts whatever its kind
SIGNATURES: dict[str, tuple[tuple[frozenset[str] | None, ...], Kind]] = {
    "len": ((frozenset({"string", "array", "object"}),), "number"),
    "any": ((frozenset({"array"}),), "boolean"),
    "all": ((frozenset({"array"}),), "boolean"),
    "max": ((frozenset({"array"}),), None),
    "min": ((frozenset({"array"}),), None),
    "str": ((_ANY,), "string"),
    "int": ((frozenset({"boolean", "number", "string"}),), "number"),
    "bool": ((_ANY,), "boolean"),
    "matches": ((frozenset({"string"}), frozenset({"string"})), "boolean"),
    "file_exists": ((frozenset({"string"}),), "boolean"),
    "file_contains": ((frozenset({"string"}), frozenset({"string"})), "boolean"),
}
"""Per builtin: the kinds each argument may have, and the kind of the result."""

_ORDERED = frozenset({"number", "string"})
_ARITHMETIC = frozenset({"-", "*", "/"})
_ORDERING = frozenset({"<", "<=", ">", ">="})


class Typed(NamedTuple):
    """What the inference settles about an expression: its certain type errors, and the kind
    its value is certain to have (None when unknown, and whenever an error was found)."""

    errors: list[ExprError]
    kind: Kind


def type_errors(tree: Node, source: str, typer: Typer) -> list[ExprError]:
    """The certain type errors of ``tree``'s non-constant nodes that always run, in source order."""
    return _Inference(tree, source, typer).errors()


def typed(tree: Node, source: str, typer: Typer) -> Typed:
    """:func:`type_errors` and the kind of the whole value, from one inference."""
    inference = _Inference(tree, source, typer)
    errors = inference.errors()
    return Typed(errors, None if errors else inference.kind(tree))


def wrong_kind(tree: Node, source: str, kind: str, needed: str) -> ExprError:
    """The type error of a whole expression whose value is ``kind`` where its field needs
    ``needed`` (a phrase: ``true or false``); spanning the expression."""
    node = unwrap(tree)
    return ExprError("type", f"{_shown(source, node)} is {_a(kind)}; {needed}", node.span)


def kind_of_type(expr: TypeExpr | None) -> Kind:
    """The kind every value of a contract type has; None for optional or unknown types."""
    if isinstance(expr, Scalar):
        return "string" if expr.name == "string" else "boolean" if expr.name == "boolean" else "number"
    if isinstance(expr, Enum):
        return "string"
    if isinstance(expr, (ArrayOf, AnyArray)):
        return "array"
    if isinstance(expr, (Named, AnyObject)):
        return "object"
    return None


def _literal_kind(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is bool:
        return "boolean"
    if type(value) is str:
        return "string"
    return "number"


def _shown(source: str, node: Node) -> str:
    """The source of ``node``, cut to 60 characters."""
    shown = source[node.span[0]: node.span[1]]
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _one_of(kinds: frozenset[str]) -> str:
    """``a string, array or object``."""
    names = [k for k in ("boolean", "number", "string", "array", "object") if k in kinds]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return _a(listed)


class _Inference:
    """Kinds and errors of every node, computed bottom-up without recursion."""

    def __init__(self, tree: Node, source: str, typer: Typer) -> None:
        self.tree, self.source, self.typer = tree, source, typer
        self.folder = Folder(tree, source)
        self.kinds: dict[int, Kind] = {}
        self.found: dict[int, str] = {}
        for node in reversed([n for n in walk(tree) if not isinstance(n, (Group, Member, Index))]):
            self.kinds[id(node)] = self._kind(node)

    def errors(self) -> list[ExprError]:
        errors, stack = [], [self.tree]
        while stack:
            node = unwrap(stack.pop())
            if self.folder.constant[id(node)]:
                continue
            message = self.found.get(id(node))
            if message is not None:
                errors.append(ExprError("type", message, node.span))
            if isinstance(node, Binary) and node.op in ("&&", "||"):
                # the right side runs only for some values of the left (even one folding
                # cannot settle: `b || !b`), and an error must be certain: only the left is read
                stack.append(node.left)
            elif isinstance(node, Binary):
                stack.extend((node.right, node.left))
            elif isinstance(node, FunctionCall):
                stack.extend(reversed(node.args))
            elif isinstance(node, (Unary, Member, Index)):
                stack.append(node.operand if isinstance(node, Unary) else node.target)
        errors.sort(key=lambda e: e.span)
        return errors

    # -- kinds ---------------------------------------------------------------------------------

    def kind(self, node: Node) -> Kind:
        """The kind of an operand; a member chain is typed only here, whole, when an operator
        or call reads it (typing every link of a long chain would be quadratic)."""
        node = unwrap(node)
        if isinstance(node, (Member, Index)):
            return self._chain(node)
        return self.kinds[id(node)]

    def text(self, node: Node) -> str:
        return _shown(self.source, node)

    def _kind(self, node: Node) -> Kind:
        if isinstance(node, Literal):
            return _literal_kind(node.value)
        if isinstance(node, Unary):
            return self._unary(node)
        if isinstance(node, Binary):
            return self._binary(node)
        if isinstance(node, FunctionCall):
            return self._call(node)
        return kind_of_type(self.typer(node.name, ()))  # a bare binding

    def _fail(self, node: Node, message: str) -> Kind:
        self.found[id(node)] = message
        return None

    def _chain(self, node: Member | Index) -> Kind:
        path: list[str | int] = []
        current: Node = node
        while isinstance(current, (Member, Index)):
            path.append(current.name if isinstance(current, Member) else current.index)
            current = unwrap(current.target)
        if not isinstance(current, Identifier):
            return None
        return kind_of_type(self.typer(current.name, tuple(reversed(path))))

    def _unary(self, node: Unary) -> Kind:
        kind, wanted = self.kind(node.operand), "boolean" if node.op == "!" else "number"
        if kind is not None and kind != wanted:
            shown = "'!'" if node.op == "!" else "unary '-'"
            return self._fail(node, f"{self.text(node.operand)} is {_a(kind)}; {shown} needs {_a(wanted)}")
        return wanted

    def _call(self, node: FunctionCall) -> Kind:
        params, result = SIGNATURES.get(node.name, ((), None))
        if len(params) != len(node.args):
            return None  # a wrong arity is reported on its own
        for arg, accepted in zip(node.args, params):
            kind = self.kind(arg)
            if accepted is not None and kind is not None and kind not in accepted:
                return self._fail(node, f"{self.text(arg)} is {_a(kind)}; {node.name}() needs {_one_of(accepted)}")
        return result

    def _binary(self, node: Binary) -> Kind:
        left, right, op = self.kind(node.left), self.kind(node.right), node.op
        if op in ("==", "!="):
            return "boolean"
        if op in ("&&", "||"):
            return self._logical(node, left, right)
        if op == "in":
            return self._contains(node, left, right)
        if op in _ARITHMETIC:
            for side, kind in ((node.left, left), (node.right, right)):
                if kind is not None and kind != "number":
                    return self._fail(node, f"{self.text(side)} is {_a(kind)}; '{op}' needs two numbers")
            return "number"
        return self._ordered(node, left, right)

    def _logical(self, node: Binary, left: Kind, right: Kind) -> Kind:
        """Only a left side is certain to be tested: the right one is not when it is skipped."""
        if left is not None and left != "boolean":
            return self._fail(node, f"{self.text(node.left)} is {_a(left)}; '{node.op}' needs booleans")
        return "boolean"

    def _ordered(self, node: Binary, left: Kind, right: Kind) -> Kind:
        """``+`` and the orderings: two numbers or two strings."""
        op, verb = node.op, "compare" if node.op in _ORDERING else "add"
        for side, kind in ((node.left, left), (node.right, right)):
            if kind is not None and kind not in _ORDERED:
                return self._fail(node, f"{self.text(side)} is {_a(kind)}; '{op}' needs two numbers "
                                        "or two strings")
        if left is None or right is None or left == right:
            return "boolean" if op in _ORDERING else left or right  # a '+' that runs adds like kinds
        subject, other, kind, other_kind = node.left, node.right, left, right
        if isinstance(unwrap(subject), Literal) and not isinstance(unwrap(other), Literal):
            subject, other, kind, other_kind = other, subject, right, left
        shown = (f"the {other_kind} {self.text(other)}" if isinstance(unwrap(other), Literal)
                 else f"{self.text(other)}, {_a(other_kind)}")
        return self._fail(node, f"{self.text(subject)} is {_a(kind)}; '{op}' cannot {verb} it with {shown}")

    def _contains(self, node: Binary, left: Kind, right: Kind) -> Kind:
        if right is not None and right not in ("array", "string", "object"):
            return self._fail(node, f"{self.text(node.right)} is {_a(right)}; 'in' needs an array, "
                                    "string or object on the right")
        if right in ("string", "object") and left is not None and left != "string":
            return self._fail(node, f"{self.text(node.left)} is {_a(left)}; 'in' with {_a(right)} "
                                    "needs a string on the left")
        return "boolean"
