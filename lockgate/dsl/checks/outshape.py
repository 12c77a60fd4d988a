"""Steps whose output the engine assembles itself, checked against their ``out`` contract: a
``set`` step's keys (``LG304``).

Declared contracts are strict (semantics §2): a key the contract lacks is an unknown field and a
required field left out is missing. A set step's keys are known before the run, so a mismatch
fails every time, and a set step never retries: it fails its scope. Optional fields (type ending
in ``?``) may be left out. Value types are checked elsewhere (``LG604`` for set values).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..diagnostics import Finding
from ..ir import Step
from ..types import TypeExpr
from .context import Context
from .suggest import did_you_mean, suffix


def check(ctx: Context) -> Iterator[Finding]:
    for flow in ctx.spec.flows.values():
        for step in flow.steps:
            fields = _out_fields(ctx, step)
            if fields is None:
                continue
            if step.kind == "set" and isinstance(step.set, Mapping):
                yield from _set_keys(step, fields)


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
    gives (at ``set``). A key that misspells a missing field is one problem, with a fix."""
    keys = [k for k in step.set if isinstance(k, str)]
    missing = [name for name in _required(fields) if name not in step.set]
    extra = [k for k in keys if k not in fields]
    never_retried = "the set output always fails the contract, and set steps never retry"
    for key in extra:
        guess = did_you_mean(key, missing)
        if guess is None and len(extra) == 1 and len(missing) == 1:
            guess = missing[0]  # one key in place of another: a rename
        if guess:
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
