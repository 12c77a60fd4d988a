"""Compiled expressions: evaluation, the predicate wrapper, and static introspection."""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterator, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from ...errors import ExprError
from .builtins import BUILTINS, arity_error
from .compiler import compile_tree
from .folding import constant_errors
from .hints import unknown_function_message, unknown_identifier_message
from .jsonvalues import type_name, utf16_len
from .limits import MAX_PATTERN_LENGTH
from .nodes import FunctionCall, Identifier, Index, Literal, Member, Node, unwrap, walk
from .parser import parse
from .regex_safety import compile_pattern
from .scope import BINDING_NAMES, Bindings, as_bindings

Span = tuple[int, int]
REASON_CODES = {"parse": "parse_error", "type": "type_error", "validation": "validation_error",
                "unknown_identifier": "unknown_identifier", "unknown_function": "unknown_function",
                "resource_limit": "resource_limit"}
_CACHE_SIZE = 2048
_FRAMES_PER_LEVEL = 16  # Python frames one nesting level can stack up while compiling or evaluating
_FRAMES_BASE = 400  # deep JSON equality and validation recursion at the leaves


class Call(NamedTuple):
    """A builtin call site: its name, the span of the whole call and its argument count."""

    name: str
    span: Span
    argc: int


class MemberPath(NamedTuple):
    """A maximal member/index chain rooted at an identifier: ``result.a.b[0]``."""

    root: str
    path: tuple[str | int, ...]
    span: Span


def reason(error: ExprError) -> str:
    """The fail-closed reason string: ``"<code>: <message>"`` with the reference's codes."""
    return f"{REASON_CODES.get(error.kind, error.kind)}: {error.message}"


class Expression:
    """One compiled expression. Immutable; safe to share between threads and evaluations."""

    __slots__ = ("_code", "_folded", "_names", "calls", "identifiers", "member_paths", "source", "tree")

    def __init__(self, source: str, tree: Node) -> None:
        self.source = source
        self.tree = tree
        nodes = list(walk(tree))
        self.identifiers: frozenset[str] = frozenset(n.name for n in nodes if isinstance(n, Identifier))
        self.calls: tuple[Call, ...] = tuple(Call(n.name, n.span, len(n.args)) for n in nodes
                                             if isinstance(n, FunctionCall))
        self.member_paths: tuple[MemberPath, ...] = tuple(_member_paths(nodes))
        self._names = tuple(sorted(self.identifiers & BINDING_NAMES))
        self._code = _with_room(compile_tree(tree, source), tree.depth)
        self._folded: tuple[tuple[str, str, Span | None], ...] | None = None

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"

    def nodes(self) -> Iterator[Node]:
        """Every AST node in source order (groups included)."""
        return walk(self.tree)

    def evaluate(self, bindings: Mapping[str, Any] | Bindings, *,
                 workspace: str | os.PathLike[str] | None = None) -> Any:
        """The value of the expression; raises only ``ExprError``."""
        try:
            if type(bindings) is not Bindings or workspace is not None:
                bindings = as_bindings(bindings, workspace)
                bindings.preload(self._names)
            return self._code(bindings)
        except ExprError:
            raise
        except RecursionError:
            raise ExprError("resource_limit", "the evaluation nested too deeply") from None
        except MemoryError:  # a value too large for this machine: a limit reached, not a type error
            raise ExprError("resource_limit", "the evaluation ran out of memory") from None
        except Exception as exc:  # a bug must still fail closed, as an ExprError
            raise ExprError("type", f"evaluation failed: {type(exc).__name__}: {exc}") from exc

    def holds(self, bindings: Mapping[str, Any] | Bindings, *,
              workspace: str | os.PathLike[str] | None = None) -> tuple[bool, str | None]:
        """The predicate wrapper: ``(True, None)`` or ``(False, reason)``."""
        try:
            value = self.evaluate(bindings, workspace=workspace)
        except ExprError as error:
            return False, reason(error)
        if value is True:
            return True, None
        if value is False:
            return False, "predicate evaluated to false"
        return False, f"type_error: predicate must evaluate to boolean, received {type_name(value)}"

    def static_errors(self, allowed: Collection[str]) -> list[ExprError]:
        """Problems certain to fail whenever reached: identifiers not in ``allowed``, wrong
        builtin arity, literal ``matches`` patterns the safety filter or compiler rejects, and
        constant sub-expressions that fail (``1 && true``, ``len(3)``) and can run."""
        errors = _static_errors(self.tree, allowed)
        if self._folded is None:
            self._folded = tuple((e.kind, e.message, e.span)
                                 for e in _new_constant_errors(self.tree, self.source, errors))
        return errors + [ExprError(*found) for found in self._folded]


def _static_errors(tree: Node, allowed: Collection[str]) -> list[ExprError]:
    errors = []
    for node in walk(tree):
        if isinstance(node, Identifier) and node.name not in allowed:
            errors.append(ExprError("unknown_identifier", _identifier_message(node.name, allowed),
                                    node.span))
        elif isinstance(node, FunctionCall):
            errors.extend(_call_errors(node))
    return errors


def _new_constant_errors(tree: Node, source: str, known: list[ExprError]) -> list[ExprError]:
    """The failing constant sub-expressions, less those whose error is one of ``known`` located
    inside them (a wrong arity, a literal pattern the filter rejects)."""
    return [error for error in constant_errors(tree, source)
            if not any(_same_inside(other, error) for other in known)]


def _same_inside(inner: ExprError, outer: ExprError) -> bool:
    if (inner.kind, inner.message) != (outer.kind, outer.message):
        return False
    if inner.span is None or outer.span is None:
        return inner.span == outer.span
    return outer.span[0] <= inner.span[0] and inner.span[1] <= outer.span[1]


def _identifier_message(name: str, allowed: Collection[str]) -> str:
    message = unknown_identifier_message(name)
    if name in BINDING_NAMES:
        shown = ", ".join(sorted(allowed)) or "nothing"
        message = f"'{name}' is not bound here; this expression can read {shown}"
    return message


def _call_errors(node: FunctionCall) -> list[ExprError]:
    builtin = BUILTINS.get(node.name)
    if builtin is None:
        return [ExprError("unknown_function", unknown_function_message(node.name), node.name_span)]
    if len(node.args) != builtin.arity:
        error = arity_error(builtin, len(node.args))
        return [ExprError(error.kind, error.message, node.span)]
    if node.name == "matches" and isinstance(pattern := unwrap(node.args[1]), Literal):
        return _pattern_errors(pattern)
    return []


def _pattern_errors(pattern: Literal) -> list[ExprError]:
    if type(pattern.value) is not str:
        return [ExprError("type", f"matches() needs a string pattern, received {type_name(pattern.value)}",
                          pattern.span)]
    if utf16_len(pattern.value) > MAX_PATTERN_LENGTH:
        return [ExprError("resource_limit", f"the regex is longer than {MAX_PATTERN_LENGTH} characters",
                          pattern.span)]
    try:
        compile_pattern(pattern.value)
    except ExprError as error:
        return [ExprError(error.kind, error.message, pattern.span)]
    return []


def _member_paths(nodes: list[Node]) -> Iterator[MemberPath]:
    """Maximal chains: a member/index node whose parent is not itself a member/index step."""
    inner: set[int] = set()
    for node in nodes:
        if isinstance(node, (Member, Index)):
            inner.add(id(unwrap(node.target)))
    for node in nodes:
        if isinstance(node, (Member, Index, Identifier)) and id(node) not in inner:
            path: list[str | int] = []
            current: Node = node
            while isinstance(current, (Member, Index)):
                path.append(current.name if isinstance(current, Member) else current.index)
                current = unwrap(current.target)
            if isinstance(current, Identifier):
                yield MemberPath(current.name, tuple(reversed(path)), node.span)


def _with_room(code: Any, depth: int) -> Any:
    """``code``, made to raise the recursion limit first when the tree is deeply nested."""
    frames = _FRAMES_PER_LEVEL * (depth + 1) + _FRAMES_BASE
    if frames <= 800:
        return code

    def roomy(scope):
        _ensure_recursion_room(frames)
        return code(scope)
    return roomy


def _ensure_recursion_room(frames: int) -> None:
    """Deeply nested expressions need more Python frames than the default limit allows."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    if depth + frames > sys.getrecursionlimit():
        sys.setrecursionlimit(depth + frames)


@lru_cache(maxsize=_CACHE_SIZE)
def _compile_cached(source: str) -> Expression:
    tree = parse(source)
    for node in walk(tree):
        if isinstance(node, FunctionCall) and node.name not in BUILTINS:
            raise ExprError("unknown_function", unknown_function_message(node.name), node.name_span)
    _ensure_recursion_room(_FRAMES_PER_LEVEL * (tree.depth + 1) + _FRAMES_BASE)
    try:
        return Expression(source, tree)
    except RecursionError:
        raise ExprError("resource_limit", "the expression is nested too deeply to compile") from None


def compile(source: str) -> Expression:
    """Parse and compile ``source`` once (cached by text); raises ``ExprError`` (parse,
    resource_limit or unknown_function)."""
    if not isinstance(source, str):
        raise ExprError("parse", f"an expression must be a string, not {type(source).__name__}")
    return _compile_cached(source)


def evaluate(source: str, bindings: Mapping[str, Any] | Bindings, *,
             workspace: str | os.PathLike[str] | None = None) -> Any:
    """``compile(source).evaluate(bindings, workspace=workspace)``."""
    return compile(source).evaluate(bindings, workspace=workspace)


def check(source: str, allowed: Collection[str]) -> list[ExprError]:
    """Every static problem of ``source`` for a context binding ``allowed``: a parse or limit
    error alone, otherwise all unknown functions and identifiers, arity and pattern errors,
    and the failing constant sub-expressions that can run."""
    try:
        tree = parse(source)
    except ExprError as error:
        return [error]
    errors = _static_errors(tree, allowed)
    _ensure_recursion_room(_FRAMES_PER_LEVEL * (tree.depth + 1) + _FRAMES_BASE)
    return errors + _new_constant_errors(tree, source, errors)
