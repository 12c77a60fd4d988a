"""Bindings as the evaluator reads them: validated on first read, then served from a dict.

A :class:`Bindings` is a ``dict`` of the bound values that passed validation, plus the raw
mapping they come from and the workspace root for file predicates. Compiled code reads
``scope[name]`` (a C-level dict lookup) and only on a miss calls :meth:`Bindings.load`, which
checks the whole value (plain JSON, finite numbers, depth <= 128, no cycles) as the reference
requires. Passing the same ``Bindings`` to several evaluations validates each value once; the
values are then treated as immutable snapshots.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ...errors import ExprError
from ..values import UNDEFINED
from .jsonvalues import check_json, is_json

BINDING_NAMES = frozenset({"result", "input", "item", "prev"})


class Bindings(dict):
    """The values an expression may read (``result``, ``input``, ``item``, ``prev``)."""

    __slots__ = ("source", "workspace")

    def __init__(self, values: Mapping[str, Any], workspace: str | os.PathLike[str] | None = None) -> None:
        super().__init__()
        if type(values) is not dict and not isinstance(values, Mapping):
            raise ExprError("type", f"bindings must be a mapping, not {type(values).__name__}")
        self.source = values
        self.workspace = workspace

    def load(self, name: str, span: tuple[int, int]) -> Any:
        """Read and validate ``name`` from the raw mapping; remember it when valid."""
        try:
            value = self.source[name]
        except (KeyError, TypeError):
            raise ExprError("unknown_identifier", f"'{name}' is not bound here", span) from None
        if value is UNDEFINED:
            raise ExprError("type", f"'{name}' is not a JSON value (it is undefined here)", span)
        try:
            value = check_json(value, name)
        except ExprError as exc:
            exc.span = span
            raise
        except RecursionError:
            raise ExprError("resource_limit", f"the value of '{name}' is nested too deeply", span) from None
        self[name] = value
        return value

    def preload(self, names: tuple[str, ...]) -> None:
        """Validate ``names`` up front so reads take the fast path; a binding that is missing or
        invalid is left out, to fail (or not, if never read) exactly when it is read."""
        source = self.source
        for name in names:
            if name not in self and name in source:
                value = source[name]
                if value is not UNDEFINED and is_json(value):
                    self[name] = value

    def with_workspace(self, workspace: str | os.PathLike[str] | None) -> Bindings:
        """The same bindings (validation kept) with another workspace root."""
        if workspace is None or workspace == self.workspace:
            return self
        copy = Bindings(self.source, workspace)
        copy.update(self)
        return copy


def as_bindings(values: Mapping[str, Any] | Bindings, workspace: Any) -> Bindings:
    if type(values) is Bindings:
        return values.with_workspace(workspace)
    return Bindings(values, workspace)
