"""The expression language of ``ensure``, ``when``, ``set`` values and ``iterate.until``.

Restricted and strictly typed (reference §5): JSON literals, member access, literal indexes,
builtin calls, ``! -``, arithmetic, comparisons, ``in``, ``&&``, ``||``; no truthiness outside
``any``/``all``/``bool``. Text is parsed once by a Lark grammar and compiled to closures::

    expr = compile("result.score >= 0.8 && len(result.items) > 0")
    expr.evaluate({"result": {"score": 0.9, "items": [1]}})      # True
    expr.holds({"result": {"score": 0.1, "items": []}})          # (False, "predicate evaluated to false")

Every failure is an :class:`lockgate.errors.ExprError` with a ``kind`` and a ``span``.
"""

from __future__ import annotations

from .builtins import BUILTINS
from .expression import Call, Expression, MemberPath, check, compile, evaluate, reason
from .jail import resolve_in_workspace
from .nodes import Node, walk
from .parser import parse
from .scope import BINDING_NAMES, Bindings

__all__ = ["BINDING_NAMES", "BUILTINS", "Bindings", "Call", "Expression", "MemberPath", "Node",
           "check", "compile", "evaluate", "parse", "reason", "resolve_in_workspace", "walk"]
