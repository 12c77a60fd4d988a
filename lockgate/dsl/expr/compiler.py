"""AST -> Python closures. Each node becomes ``f(scope) -> value``; nothing is re-parsed.

Speed comes from specialisation at compile time: member chains read a tuple of keys in one
closure, comparisons against a literal check one operand's type only, ``&&``/``||`` chains loop
over their operands, and types are tested with ``type(x) is``. Left spines of binary operators
(``1 + 1 + ... + 1``, up to 2048 terms) are evaluated in a loop, never by recursion.

An ``ExprError`` raised without a span (by an operator or builtin) receives the span of the
innermost compiled node that sees it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import ExprError
from . import calls, fused
from . import operators as ops
from .builtins import BUILTINS, arity_error
from .equality import json_equal
from .hints import unknown_identifier_message
from .jsonvalues import joined, type_name
from .nodes import (
    Binary,
    FunctionCall,
    Identifier,
    Index,
    Literal,
    Member,
    Node,
    Unary,
    unwrap,
)
from .scope import BINDING_NAMES

Code = Callable[[Any], Any]
Span = tuple[int, int]
_NUMBER = (int, float)
# Precedence levels: a left spine within one level is folded in a loop (it may be 2048 long);
# across levels the nesting is bounded by the grammar's five levels per parenthesis.
_LEVEL = {"||": 0, "&&": 1, "==": 2, "!=": 2, "<": 2, "<=": 2, ">": 2, ">=": 2, "in": 2,
          "+": 3, "-": 3, "*": 4, "/": 4}


def compile_tree(tree: Node, source: str) -> Code:
    """The closure evaluating ``tree``; ``source`` is used to name values in messages."""
    return _Compiler(source).node(tree)


class _Compiler:
    def __init__(self, source: str) -> None:
        self.source = source

    def text(self, span: Span) -> str:
        shown = self.source[span[0]: span[1]]
        return shown if len(shown) <= 60 else shown[:57] + "..."

    def node(self, node: Node) -> Code:
        node = unwrap(node)
        if isinstance(node, Literal):
            value = node.value
            return lambda scope: value
        if isinstance(node, Identifier):
            return self.identifier(node)
        if isinstance(node, (Member, Index)):
            return self.chain(node)
        if isinstance(node, Unary):
            return self.unary(node)
        if isinstance(node, Binary):
            return self.binary(node)
        return self.call(node)

    # -- names and member chains -----------------------------------------------------------

    def identifier(self, node: Identifier) -> Code:
        name, span = node.name, node.span
        if name not in BINDING_NAMES:
            message = unknown_identifier_message(name)

            def unknown(scope):
                raise ExprError("unknown_identifier", message, span)
            return unknown

        def read(scope):
            try:
                return scope[name]
            except KeyError:
                return scope.load(name, span)
        return read

    def chain(self, node: Member | Index) -> Code:
        steps: list[Member | Index] = []
        current: Node = node
        while isinstance(current, (Member, Index)):
            steps.append(current)
            current = unwrap(current.target)
        steps.reverse()
        base = self.node(current)
        keys = tuple(s.name if isinstance(s, Member) else s.index for s in steps)
        explain = self._chain_error(steps)
        if all(isinstance(s, Member) for s in steps):
            name = current.name if isinstance(current, Identifier) and current.name in BINDING_NAMES else None
            return _member_chain(base, keys, explain, name)
        return _mixed_chain(base, keys, explain)

    def _chain_error(self, steps: list[Member | Index]) -> Callable[[Any], ExprError]:
        """Builds the precise error for a failed walk by re-walking from the base value."""
        described = [(s, self.text(s.target.span), isinstance(s, Index) and self.text(s.index_span))
                     for s in steps]

        def explain(value: Any) -> ExprError:
            for step, owner, index in described:
                if isinstance(step, Member):
                    if type(value) is not dict:
                        return ExprError("type", f"cannot read member '{step.name}' of {owner}: it is "
                                         f"{_a(type_name(value))}, not an object", step.span)
                    if step.name not in value:
                        return ExprError("type", f"{owner} has no member '{step.name}'", step.span)
                    value = value[step.name]
                else:
                    if type(value) is not list:
                        return ExprError("type", f"cannot index {owner}: it is {_a(type_name(value))}, "
                                         "not an array", step.span)
                    if step.index >= len(value):
                        return ExprError("type", f"index {index} is out of bounds for {owner} "
                                         f"(length {len(value)})", step.span)
                    value = value[step.index]
            return ExprError("type", "invalid member access", steps[-1].span)
        return explain

    # -- operators -----------------------------------------------------------------------------

    def unary(self, node: Unary) -> Code:
        operand, span = self.node(node.operand), node.span
        if node.op == "!":
            def negate(scope):
                value = operand(scope)
                if value is True:
                    return False
                if value is False:
                    return True
                raise ExprError("type", f"'!' needs a boolean, received {type_name(value)}", span)
            return negate

        def minus(scope):
            value = operand(scope)
            kind = type(value)
            if kind is int or kind is float:
                return -value if value else 0
            raise ExprError("type", f"unary '-' needs a number, received {type_name(value)}", span)
        return minus

    def binary(self, node: Binary) -> Code:
        spine: list[Binary] = []
        current: Node = node
        level = _LEVEL[node.op]
        while isinstance(current, Binary) and _LEVEL[current.op] == level:
            spine.append(current)
            current = unwrap(current.left)
        spine.reverse()
        first = self.node(current)
        if all(b.op == spine[0].op for b in spine) and spine[0].op in ("&&", "||"):
            rights = [b.right for b in spine]
            return _logical_chain(spine[0].op, [first, *(self.node(n) for n in rights)],
                                  [current.span, *(n.span for n in rights)])
        if len(spine) == 1:
            return self.single(spine[0], first)
        steps = tuple(self.step(b) for b in spine)
        if all(b.op == "+" for b in spine):
            return _sum_chain(first, tuple(self.node(b.right) for b in spine), steps, node.span)

        def fold(scope):
            value = first(scope)
            for step in steps:
                value = step(value, scope)
            return value
        return fold

    def single(self, node: Binary, left: Code) -> Code:
        right_node = unwrap(node.right)
        if isinstance(right_node, Literal) and node.op in ops.COMPARISONS:
            return self.compare_literal(node, left, right_node.value)
        if node.op == "in" and isinstance(unwrap(node.left), Literal):
            literal = unwrap(node.left).value
            if type(literal) is str:
                return ops.in_literal_string(literal, self.node(node.right), node.span)
        if node.op in ("&&", "||"):
            step = self.step(node)
            return lambda scope: step(left(scope), scope)
        right, span = self.node(node.right), node.span
        if node.op in ("==", "!="):
            return _equality(node.op == "==", left, right)
        apply = ops.BINARY[node.op]

        def binary(scope):
            a, b = left(scope), right(scope)
            try:
                return apply(a, b)
            except ExprError as exc:
                raise calls.with_span(exc, span)
        return binary

    def compare_literal(self, node: Binary, left: Code, literal: Any) -> Code:
        path = _one_member_path(node.left)
        if path is not None:
            if node.op in ("==", "!="):
                return fused.equal_literal(node.op == "==", *path, left, literal)
            if type(literal) is int or type(literal) is float:
                return fused.order_number(node.op, *path, left, literal, node.span)
        return ops.compare_literal(node.op, left, literal, node.span)

    def step(self, node: Binary) -> Callable[[Any, Any], Any]:
        """``(left_value, scope) -> result`` for one operator application."""
        right, span = self.node(node.right), node.span
        if node.op in ("&&", "||"):
            return ops.logical_step(node.op, right, span)
        apply = ops.BINARY[node.op]

        def step(value, scope):
            other = right(scope)
            try:
                return apply(value, other)
            except ExprError as exc:
                raise calls.with_span(exc, span)
        return step

    # -- calls ---------------------------------------------------------------------------------

    def call(self, node: FunctionCall) -> Code:
        builtin = BUILTINS[node.name]  # unknown names were rejected before compiling
        span = node.span
        if len(node.args) != builtin.arity:
            error = arity_error(builtin, len(node.args))

            def wrong_arity(scope):
                raise ExprError(error.kind, error.message, span)
            return wrong_arity
        args = tuple(self.node(a) for a in node.args)
        if node.name == "matches" and isinstance(unwrap(node.args[1]), Literal):
            return calls.matches_literal(args[0], unwrap(node.args[1]).value, span)
        if node.name == "len" and (path := _one_member_path(node.args[0])) is not None:
            return fused.length(*path, args[0], span)
        if node.name in calls.INLINE:
            return calls.INLINE[node.name](args[0], span)
        if builtin.needs_workspace:
            return calls.workspace_call(builtin.function, args, span)
        return calls.generic_call(builtin.function, args, span)


def _one_member_path(node: Node) -> tuple[str, str] | None:
    """``(binding, key)`` when ``node`` is ``binding.key`` for a binding name, else None."""
    node = unwrap(node)
    if isinstance(node, Member):
        target = unwrap(node.target)
        if isinstance(target, Identifier) and target.name in BINDING_NAMES:
            return target.name, node.name
    return None


def _a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def _member_chain(base: Code, keys: tuple[str, ...], explain: Callable[[Any], ExprError],
                  name: str | None) -> Code:
    """A chain of object members. When rooted at a binding, the fast path is plain subscripts.

    Validated values are plain JSON, so a str subscript succeeds only on a dict holding the key:
    lists, strings, numbers, booleans and None raise TypeError, a missing key KeyError. Any
    failure (including a binding not yet loaded into the scope) takes the careful path.
    """
    def careful(scope):
        root = value = base(scope)
        try:
            for key in keys:
                value = value[key]
        except (KeyError, TypeError):
            raise explain(root) from None
        return value

    if name is None:
        return careful
    if len(keys) == 1:
        (key,) = keys

        def member(scope):
            try:
                return scope[name][key]
            except (KeyError, TypeError):
                return careful(scope)
        return member
    if len(keys) == 2:
        first, second = keys

        def member2(scope):
            try:
                return scope[name][first][second]
            except (KeyError, TypeError):
                return careful(scope)
        return member2

    if len(keys) == 3:
        first, second, third = keys

        def member3(scope):
            try:
                return scope[name][first][second][third]
            except (KeyError, TypeError):
                return careful(scope)
        return member3

    def members(scope):
        try:
            value = scope[name]
            for key in keys:
                value = value[key]
            return value
        except (KeyError, TypeError):
            return careful(scope)
    return members


def _mixed_chain(base: Code, keys: tuple[str | int, ...], explain: Callable[[Any], ExprError]) -> Code:
    def walk(scope):
        root = value = base(scope)
        for key in keys:
            kind = type(value)
            if type(key) is str and kind is dict and key in value or type(key) is int and kind is list and key < len(value):
                value = value[key]
            else:
                raise explain(root)
        return value
    return walk


def _sum_chain(first: Code, rights: tuple[Code, ...], steps: tuple[Callable[[Any, Any], Any], ...],
               span: Span) -> Code:
    """``a + b + c + ...``: numbers fold step by step; strings are joined once at the end, since
    concatenating one at a time copies the growing text again for every term (2048 terms of a
    100 kB string took 90 s), and only when the whole is within the limit (:func:`joined`). A
    term that is not a string goes through its step for the error."""
    def add_all(scope):
        value = first(scope)
        if type(value) is not str:
            for step in steps:
                value = step(value, scope)
            return value
        parts = [value]
        for right, step in zip(rights, steps):
            other = right(scope)
            if type(other) is not str:
                step("", scope)  # raises the step's type error (string and ...)
            parts.append(other)
        try:
            return joined(parts)
        except ExprError as exc:
            raise calls.with_span(exc, span)
    return add_all


def _logical_chain(op: str, operands: list[Code], spans: list[Span]) -> Code:
    """``a && b && c`` (or ``||``): booleans only, short-circuit, one loop."""
    stop = op == "||"  # the value that decides the whole chain
    proceed = not stop
    checks = tuple(zip(operands, spans))
    if len(operands) == 2:
        return _logical_pair(op, operands, spans)

    def chain(scope):
        for operand, span in checks:
            value = operand(scope)
            if value is proceed:
                continue
            if value is stop:
                return stop
            raise ExprError("type", f"'{op}' needs booleans, received {type_name(value)}", span)
        return proceed
    return chain


def _logical_pair(op: str, operands: list[Code], spans: list[Span]) -> Code:
    (left, right), (left_span, right_span) = operands, spans

    def fail(value: Any, span: Span) -> ExprError:
        return ExprError("type", f"'{op}' needs booleans, received {type_name(value)}", span)

    if op == "&&":
        def both(scope):
            value = left(scope)
            if value is True:
                value = right(scope)
                if value is True or value is False:
                    return value
                raise fail(value, right_span)
            if value is False:
                return False
            raise fail(value, left_span)
        return both

    def either(scope):
        value = left(scope)
        if value is False:
            value = right(scope)
            if value is True or value is False:
                return value
            raise fail(value, right_span)
        if value is True:
            return True
        raise fail(value, left_span)
    return either


def _equality(positive: bool, left: Code, right: Code) -> Code:
    """Deep JSON equality, with scalars of one type compared directly (True == 1 never arises:
    the types differ and json_equal decides)."""
    def equal(scope):
        a, b = left(scope), right(scope)
        kind = type(a)
        if kind is type(b) and kind is not list and kind is not dict:
            return (a == b) is positive
        return json_equal(a, b) is positive
    return equal
