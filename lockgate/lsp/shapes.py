"""What type a reference or a member chain has, for completion, hover and inlay hints.

The types come from the one source of truth, :class:`lockgate.dsl.contracts.ContractSet`
(``fields_of`` and ``type_at``, the same typing the checks use); this module adds what an
editor asks on top: a step's output type, a reference's type, a fanout's element type, and a
readable rendering. Paths that lead nowhere give ``None`` (the diagnostics explain them);
editors only need a best guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lockgate.dsl.contracts import ContractSet
from lockgate.dsl.ir import Flow, Spec, Step
from lockgate.dsl.refs import Ref, scan
from lockgate.dsl.types import (
    AnyArray,
    ArrayOf,
    Named,
    TypeExpr,
    Unknown,
    strip_optional,
)
from lockgate.errors import ContractError

PathPart = str | int

_SETS: dict[int, tuple[Spec, ContractSet]] = {}
_SETS_SIZE = 8


def contracts(spec: Spec) -> ContractSet:
    """The spec's contract set, built once per IR (the few most recent IRs are kept)."""
    found = _SETS.get(id(spec))
    if found is not None and found[0] is spec:
        return found[1]
    built = ContractSet.from_decls(spec.contracts)
    if len(_SETS) >= _SETS_SIZE:
        _SETS.pop(next(iter(_SETS)))
    _SETS[id(spec)] = (spec, built)  # holding the spec keeps its id from being reused
    return built


def fields_of(spec: Spec, expr: TypeExpr | None) -> dict[str, TypeExpr] | None:
    """The fields of a declared contract type (optional or not); None for any other type."""
    if expr is None:
        return None
    base = strip_optional(expr)
    if not isinstance(base, Named) or base.name not in contracts(spec):
        return None
    return contracts(spec).fields_of(base)


def input_fields(spec: Spec, flow: Flow) -> dict[str, TypeExpr]:
    """The fields of a flow's ``input`` (unparsable types show as unknown)."""
    return contracts(spec).fields_of(_input(flow))


def type_at(spec: Spec, root: TypeExpr | Mapping[str, Any] | None, path: Sequence[PathPart]) -> TypeExpr | None:
    """The type reached by following ``path`` from ``root`` (a type or an inline field
    mapping); None when the path does not exist."""
    if root is None:
        return None
    try:
        return contracts(spec).type_at(root, tuple(path))
    except ContractError:
        return None


def input_type_at(spec: Spec, flow: Flow, path: Sequence[PathPart]) -> TypeExpr | None:
    """The type of ``input.<path>`` in ``flow``; None when the path does not exist."""
    return type_at(spec, _input(flow), path) if path else None


def _input(flow: Flow) -> dict[str, Any]:
    return {str(k): v for k, v in flow.input.items()}


def step_output(spec: Spec, flow: Flow | None, step: Step | None) -> TypeExpr | None:
    """The type of ``${step.output}``: its ``out`` contract (do, set and evaluate steps), a
    fanout's array of its last stage's ``out``, or a subflow's output contract."""
    if step is None:
        return None
    if step.kind in ("do", "set", "evaluate") and step.out:
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
        return input_type_at(spec, flow, ref.path)
    if ref.kind == "step" and ref.name:
        return type_at(spec, step_output(spec, flow, flow.step(ref.name)), ref.path)
    if ref.kind == "carry" and ref.name:
        carry = flow.carry.get(ref.name)  # a flow's own carry: a subflow sees none (LG407)
        source = scan(carry.initial).full if carry and carry.initial else None
        if source is None or source.kind == "carry":
            return None
        return type_at(spec, ref_type(spec, flow, source), ref.path)
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
