"""What type a reference or a member chain has, for completion, hover and inlay hints.

A read-only view over the spec's contracts through :func:`lockgate.dsl.types.parse_type`:
the fields of a type, the type at a path, a step's output type and a reference's type. Unknown
or invalid types give ``None`` (the diagnostics explain them); editors only need a best guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from lockgate.dsl.ir import Flow, Spec, Step
from lockgate.dsl.refs import Ref, scan
from lockgate.dsl.types import AnyArray, AnyObject, ArrayOf, Named, TypeExpr, Unknown, parse_type, strip_optional
from lockgate.errors import ContractError

PathPart = str | int


@lru_cache(maxsize=4096)
def parsed(text: str) -> TypeExpr | None:
    try:
        return parse_type(text)
    except ContractError:
        return None


def fields_of(spec: Spec, expr: TypeExpr | None) -> dict[str, TypeExpr | None] | None:
    """The fields of an object type (named contract); None when the type has no known fields."""
    if expr is None:
        return None
    expr = strip_optional(expr)
    if isinstance(expr, Named):
        decl = spec.contracts.get(expr.name)
        return _fields(decl.fields) if decl is not None else None
    return None


def input_fields(flow: Flow) -> dict[str, TypeExpr | None]:
    return _fields(flow.input)


def _fields(fields: Mapping[str, Any]) -> dict[str, TypeExpr | None]:
    return {str(k): parsed(v) if isinstance(v, str) else None for k, v in fields.items()}


def type_at(spec: Spec, root: TypeExpr | None, path: tuple[PathPart, ...]) -> TypeExpr | None:
    """The type reached by following ``path`` from ``root``; None when it leads nowhere."""
    current = root
    for part in path:
        if current is None:
            return None
        current = strip_optional(current)
        if isinstance(current, (AnyObject, AnyArray, Unknown)):
            return Unknown()
        if isinstance(part, int):
            current = current.element if isinstance(current, ArrayOf) else None
        else:
            fields = fields_of(spec, current)
            current = fields.get(part) if fields is not None else None
    return current


def step_output(spec: Spec, flow: Flow | None, step: Step | None) -> TypeExpr | None:
    """The type of ``${step.output}``: its ``out`` contract, a fanout's array of its last
    stage's ``out``, or a subflow's output contract."""
    if step is None:
        return None
    if step.kind in ("do", "set") and step.out:
        return Named(step.out)
    if step.kind == "fanout" and step.fanout and step.fanout.stages:
        last = step.fanout.stages[-1].out
        return ArrayOf(Named(last)) if last else None
    if step.kind == "run" and step.run:
        callee = spec.flows.get(step.run)
        if callee is not None and callee.output is not None and callee.output.contract:
            return Named(callee.output.contract)
    return None


def ref_type(spec: Spec, flow: Flow | None, ref: Ref, *, item: TypeExpr | None = None,
             prev: TypeExpr | None = None) -> TypeExpr | None:
    """The type a well-formed reference resolves to inside ``flow``."""
    if flow is None:
        return None
    if ref.kind == "input":
        if not ref.path:
            return None
        first = input_fields(flow).get(str(ref.path[0]))
        return type_at(spec, first, ref.path[1:])
    if ref.kind == "step" and ref.name:
        return type_at(spec, step_output(spec, flow, flow.step(ref.name)), ref.path)
    if ref.kind == "carry" and ref.name:
        root = spec.entry_flow or flow
        carry = root.carry.get(ref.name)
        source = scan(carry.initial).full if carry and carry.initial else None
        if source is None or source.kind == "carry":
            return None
        return type_at(spec, ref_type(spec, root, source), ref.path)
    if ref.kind == "item":
        return type_at(spec, item, ref.path)
    if ref.kind == "prev":
        return type_at(spec, prev, ref.path)
    return None


def fanout_item(spec: Spec, flow: Flow, step: Step) -> TypeExpr | None:
    """The element type of a fanout's ``over`` list."""
    over = scan(step.fanout.over).full if step.fanout and step.fanout.over else None
    if over is None or over.kind in ("item", "prev"):
        return None
    whole = strip_optional(ref_type(spec, flow, over) or Unknown())
    if isinstance(whole, ArrayOf):
        return whole.element
    return Unknown() if isinstance(whole, (AnyArray, Unknown)) else None


def stage_output(step: Step, index: int) -> TypeExpr | None:
    """The ``out`` of fanout stage ``index`` (``prev`` of stage ``index + 1``)."""
    if step.fanout is None or not 0 <= index < len(step.fanout.stages):
        return None
    out = step.fanout.stages[index].out
    return Named(out) if out else None


def describe(spec: Spec, expr: TypeExpr | None, *, depth: int = 2, indent: str = "") -> str:
    """A type as readable text, expanding named contracts ``depth`` levels deep."""
    if expr is None:
        return "unknown"
    fields = fields_of(spec, expr)
    if fields is None or depth <= 0:
        return expr.describe()
    inner = indent + "  "
    lines = [f"{inner}{name}: {describe(spec, t, depth=depth - 1, indent=inner)}" for name, t in fields.items()]
    suffix = "?" if expr.optional else ""
    return f"{strip_optional(expr).describe()}{suffix} {{\n" + "\n".join(lines) + f"\n{indent}}}"
