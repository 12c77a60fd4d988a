"""Carry: loop-carried values of the entry flow.

A variable is written from its ``initial`` reference when its source step succeeds in a new
epoch (input-sourced ones once, at plan), and rewritten by a gate's ``on_revise`` reference,
resolved against the scope *before* the revise resets it. Carry creates no dependency edges.
"""

from __future__ import annotations

from typing import Any

from ..dsl.refrender import source_fate
from ..dsl.refs import Ref, scan
from ..dsl.values import UNDEFINED
from ..errors import EngineError
from .live import LiveRun, Scope
from .model import now


def materialise(run: LiveRun, source: str) -> None:
    """Write the variables whose ``initial`` reads ``source`` ("" for input-sourced ones)."""
    names = run.root.flow.carry_sources.get(source)
    if not names:
        return
    from .advance import resolver

    resolve = resolver(run, run.root)
    st = run.steps.get(source) if source else None
    epoch = st.epoch if st is not None else None
    staged: dict[str, Any] = {}
    for name in names:
        entry = run.header.carry.get(name)
        if entry is not None and (source == "" or entry["provenance"].get("source_epoch") == epoch):
            continue
        var = run.root.flow.flow.carry[name]
        ref = scan(var.initial or "").full
        value = resolve(ref) if ref is not None else UNDEFINED
        if value is UNDEFINED:
            run.fail_run("carry_unresolved", f"carry_initial_unresolved: {var.initial} for carry {name!r}")
            return
        provenance = {"kind": "initial", "at": now()}
        if source:
            provenance.update(source_step=source, source_epoch=epoch)
        staged[name] = {"value": value, "provenance": provenance}
    for name, entry in staged.items():
        run.header.carry[name] = entry
        run.event("carry_updated", source or None, name=name, reason="initial", provenance=entry["provenance"])


def revise_writes(run: LiveRun, gate_id: str) -> dict[str, Any]:
    """The values a revise at ``gate_id`` writes, resolved before the reset; raise if any is
    unavailable (the gate's token is not consumed)."""
    from .advance import resolver

    resolve = resolver(run, run.root)
    out: dict[str, Any] = {}
    for name, var in run.root.flow.flow.carry.items():
        text = var.on_revise.get(gate_id)
        if not isinstance(text, str):
            continue
        ref = scan(text).full
        value = resolve(ref) if ref is not None else UNDEFINED
        if value is UNDEFINED:
            why = fate(run, run.root, ref) if ref is not None else None
            raise EngineError(f"carry_revise_unresolved: {text} for carry {name!r} is unavailable"
                              f"{f' ({why})' if why else ''}; the gate is still waiting",
                              error_type="carry_revise_unresolved", run_id=run.header.id, step_id=gate_id)
        out[name] = value
    return out


def fate(run: LiveRun, scope: Scope, ref: Ref) -> str | None:
    """What happened to the step of ``scope`` that ``ref`` reads, whose value is unavailable
    (:func:`~lockgate.dsl.refrender.source_fate`: "step assess was skipped"), or None."""
    st = run.steps.get(scope.prefix + ref.name) if ref.kind == "step" and ref.name else None
    if st is None or st.dropped:
        return None
    return source_fate(ref, st.status, (st.failure or {}).get("reason"))


def apply_revise_writes(run: LiveRun, gate_id: str, token: str | None, round_: int, writes: dict[str, Any]) -> None:
    for name, value in writes.items():
        old = run.header.carry.get(name) or {"provenance": {}}
        provenance = {
            "kind": "revise", "gate": gate_id, "gate_token": token, "round": round_, "at": now(),
            "source_step": old["provenance"].get("source_step"),
            "source_epoch": old["provenance"].get("source_epoch"),
        }
        run.header.carry[name] = {"value": value, "provenance": provenance}
        run.event("carry_updated", gate_id, name=name, reason="revise", provenance=provenance)
