"""Constant sub-expressions that fail whenever they run, found before anything runs.

A sub-expression made solely of literals (and pure builtin calls over them) has one outcome;
when that outcome is an error (``1 && true``, ``-"x"``, ``len(3)``, ``1 / 0``), the expression
fails every time it gets there. The maximal such sub-expressions are evaluated here with the
evaluator's own closures, so the error, its message and its span are exactly the runtime's.
Identifiers are never folded, and neither are the file predicates (they read the disk).

A sub-expression is only reported if it can run (reference §5.5): the right side of ``&&``
runs only when the left side can be true, that of ``||`` only when it can be false. So
``false && (1 < "a")`` is fine, and so is ``result.ok && false && len(3) > 0``. Each node's
possible boolean outcomes are computed bottom-up, without recursion (left spines of operators
are up to 2048 nodes long).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ...errors import ExprError
from .builtins import BUILTINS
from .compiler import compile_tree
from .nodes import (
    Binary,
    FunctionCall,
    Group,
    Identifier,
    Literal,
    Node,
    Unary,
    children,
    unwrap,
    walk,
)
from .scope import Bindings


class _Outcome(NamedTuple):
    """A constant node's value, or the error it raises; ``known`` is false when evaluating it
    failed otherwise (nested too deeply): then it is treated as unknown."""

    value: Any = None
    error: ExprError | None = None
    known: bool = True


_NOT_CONSTANT = _Outcome(known=False)


def constant_errors(tree: Node, source: str) -> list[ExprError]:
    """The errors of the maximal constant sub-expressions that can run, in source order."""
    folder = Folder(tree, source)
    errors: list[ExprError] = []
    stack = [tree]
    while stack:
        node = unwrap(stack.pop())
        if folder.constant[id(node)]:
            error = folder.outcome(node).error
            if error is not None:
                errors.append(error)
            continue
        if isinstance(node, Binary) and node.op in ("&&", "||"):
            if folder.may(node.left, node.op == "&&"):  # the right side can run
                stack.append(node.right)
            stack.append(node.left)
            continue
        stack.extend(reversed(children(node)))
    return errors


class Folder:
    """Which nodes are constant, their outcomes (evaluated once, only when asked) and, for the
    others, which booleans they may produce. Groups share their inner node's entries."""

    def __init__(self, tree: Node, source: str) -> None:
        self.source = source
        self.constant: dict[int, bool] = {}
        self.outcomes: dict[int, _Outcome] = {}
        self.booleans: dict[int, tuple[bool, bool]] = {}  # (may be true, may be false)
        for node in reversed([n for n in walk(tree) if not isinstance(n, Group)]):
            parts = children(node)
            self.constant[id(node)] = _foldable(node) and all(self.constant[id(unwrap(c))] for c in parts)
            if not self.constant[id(node)]:
                self.booleans[id(node)] = self._booleans(node)

    def outcome(self, node: Node) -> _Outcome:
        """The value or error of a constant node."""
        node = unwrap(node)
        found = self.outcomes.get(id(node))
        if found is None:
            found = self.outcomes[id(node)] = _evaluate(node, self.source)
        return found

    def may(self, node: Node, flag: bool) -> bool:
        """Whether ``node`` may evaluate to the boolean ``flag``."""
        node = unwrap(node)
        if not self.constant[id(node)]:
            return self.booleans[id(node)][not flag]
        outcome = self.outcome(node)
        return not outcome.known or (outcome.error is None and outcome.value is flag)

    def _booleans(self, node: Node) -> tuple[bool, bool]:
        if isinstance(node, Unary) and node.op == "!":
            return self.may(node.operand, False), self.may(node.operand, True)
        if not isinstance(node, Binary) or node.op not in ("&&", "||"):
            return True, True
        left_true, left_false = self.may(node.left, True), self.may(node.left, False)
        right_true, right_false = self.may(node.right, True), self.may(node.right, False)
        if node.op == "&&":
            return left_true and right_true, left_false or (left_true and right_false)
        return left_true or (left_false and right_true), left_false and right_false


def _foldable(node: Node) -> bool:
    """Whether ``node`` is constant once its children are: not a name, not a file predicate."""
    if isinstance(node, Identifier):
        return False
    if isinstance(node, FunctionCall):
        builtin = BUILTINS.get(node.name)
        return builtin is not None and not builtin.needs_workspace
    return True


def _evaluate(node: Node, source: str) -> _Outcome:
    if isinstance(node, Literal):
        return _Outcome(node.value)
    try:
        return _Outcome(compile_tree(node, source)(Bindings({})))
    except ExprError as error:
        return _Outcome(error=error)
    except Exception:  # noqa: BLE001 - too deep, or a bug: say nothing rather than guess
        return _NOT_CONSTANT
