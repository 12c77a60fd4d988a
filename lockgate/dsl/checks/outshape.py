"""Steps whose output the engine assembles itself, checked against their ``out`` contract: a
``set`` step's keys (``LG304``) and an ``evaluate`` step's fixed result shape (``LG305``).

Declared contracts are strict (semantics §2): a key the contract lacks is an unknown field and a
required field left out is missing. For these two kinds the keys are known before the run, so a
mismatch fails every time, and neither kind retries: a set step fails its scope, an evaluate
failure is forced exhausted (§6.11). Optional fields (type ending in ``?``) may be left out.
Set value types are checked elsewhere (``LG604``); an evaluate result's are checked here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..diagnostics import Finding
from ..expr.typecheck import kind_of_type
from ..ir import Step
from ..types import Enum, TypeExpr, strip_optional
from .context import Context
from .suggest import did_you_mean, suffix

#: The evaluator-result shape (§1.7; the engine's ``evaluate._RESULT_FIELDS``): field -> (the
#: kind of its value, whether every result has it). ``status`` is one of closed|open|failed.
EVALUATOR_RESULT: Mapping[str, tuple[str, bool]] = {
    "status": ("string", True),
    "children": ("array", True),
    "reason": ("string", True),
    "score": ("number", False),
    "route": ("string", False),
}
_STATUSES = ("closed", "open", "failed")
#: That shape as the contract language writes it (the engine's ``evaluate._RESULT_FIELDS``), so a
#: hint showing it can be pasted as a contract.
_RESULT_SHAPE = ("{status: closed|open|failed, children: array, reason: string, score: number?, "
                "route: claude|codex?}")


def check(ctx: Context) -> Iterator[Finding]:
    for flow in ctx.spec.flows.values():
        for step in flow.steps:
            fields = _out_fields(ctx, step)
            if fields is None:
                continue
            if step.kind == "set" and isinstance(step.set, Mapping):
                yield from _set_keys(step, fields)
            elif step.kind == "evaluate":
                yield from _evaluate_out(step, fields)


def _out_fields(ctx: Context, step: Step) -> dict[str, TypeExpr] | None:
    """The fields of the step's ``out`` contract; None without one or when it has problems of
    its own (reported as LG301-303)."""
    if not isinstance(step.out, str):
        return None
    contract = ctx.contracts.get(step.out)
    return None if contract is None else contract.fields


def _required(fields: Mapping[str, TypeExpr]) -> list[str]:
    return [name for name, typ in fields.items() if not typ.optional]


def _field_list(fields: Mapping[str, TypeExpr]) -> str:
    return ", ".join(f"{name}: {typ}" for name, typ in fields.items()) or "no fields"


def _set_keys(step: Step, fields: dict[str, TypeExpr]) -> Iterator[Finding]:
    """One finding per key the contract lacks (at the key), one for the required fields no key
    gives (at ``set``). A key that misspells a field the set does not give (optional or not) is
    one problem, with a fix; a key unlike every such field gets no guess."""
    keys = [k for k in step.set if isinstance(k, str)]
    missing = [name for name in _required(fields) if name not in step.set]
    ungiven = [name for name in fields if name not in step.set]
    extra = [k for k in keys if k not in fields]
    never_retried = "the set output always fails the contract, and set steps never retry"
    for key in extra:
        guess = did_you_mean(key, ungiven)
        if guess:
            ungiven.remove(guess)
            if guess in missing:
                missing.remove(guess)
        yield Finding(
            "LG304",
            f"'{key}' is not a field of out contract {step.out}{suffix(guess)}: {never_retried}",
            (*step.at, "set", key),
            at="key",
            replacement=guess,
            hint=f"{step.out} has {_field_list(fields)}",
        )
    if missing:
        names = ", ".join(f"'{name}'" for name in missing)
        yield Finding(
            "LG304",
            f"'set' gives no value for required field{'s' if len(missing) > 1 else ''} {names} of out "
            f"contract {step.out}: {never_retried}",
            (*step.at, "set"),
            at="key",
            hint=f"give {'each' if len(missing) > 1 else 'it'} a value in 'set', or make "
            f"{'them' if len(missing) > 1 else 'it'} optional in the contract (a type ending in '?')",
        )


def _evaluate_out(step: Step, fields: dict[str, TypeExpr]) -> Iterator[Finding]:
    """The ``out`` of an evaluate step is checked on the evaluator's result, whose keys are
    fixed: every problem below refuses every result."""
    lacks = [name for name, (_, always) in EVALUATOR_RESULT.items() if always and name not in fields]
    foreign = [name for name in _required(fields) if name not in EVALUATOR_RESULT]
    clashes = [f"{name}: {fields[name]}" for name in EVALUATOR_RESULT if _clashes(name, fields.get(name))]
    problems = []
    if lacks:
        problems.append(f"lacks {_names(lacks)}, which every evaluator result has (an unknown field)")
    if foreign:
        problems.append(f"requires {_names(foreign)}, which no evaluator result has")
    if clashes:
        problems.append(f"declares {', '.join(clashes)}, which no evaluator result's value fits")
    if not problems:
        return
    yield Finding(
        "LG305",
        f"out contract {step.out} of evaluate step '{step.id}' {'; it '.join(problems)}: every "
        f"result fails it, and evaluate steps never retry",
        (*step.at, "out"),
        hint=f"an evaluator returns {_RESULT_SHAPE}; its out contract must accept that shape",
    )


def _clashes(name: str, declared: TypeExpr | None) -> bool:
    """Whether a field every result has can never hold its value: a different kind, or a status
    enum with none of the statuses."""
    kind, always = EVALUATOR_RESULT[name]
    if declared is None or not always:
        return False
    inner = strip_optional(declared)
    found = kind_of_type(inner)
    if found is not None and found != kind:
        return True
    return name == "status" and isinstance(inner, Enum) and not set(inner.members) & set(_STATUSES)


def _names(names: list[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)
