"""Canonical plain data of a validated :class:`~lockgate.dsl.ir.Spec`, and its digest.

A run stores the spec as data (not the source text) so that ``resume`` in a fresh process can
rebuild everything with :func:`lockgate.dsl.ir.build_spec` alone; the sha256 digest of the
canonical JSON detects a stored spec that was edited behind the engine's back.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from typing import Any

from ..dsl.ir import Budget, Ensure, Flow, Spec, Step
from .model import SPEC_KEY, Shape, check_shape

#: id(spec) -> (weak reference to it, its data, their digest): ``plan`` of the same Spec object
#: again (a notebook cell or runner re-planning it) skips encoding and hashing the whole spec.
_MEMO: dict[int, tuple[weakref.ref[Spec], dict[str, Any], str]] = {}
_MEMO_SIZE = 64


def spec_data(spec: Spec) -> tuple[dict[str, Any], str]:
    """``(spec_to_data(spec), digest(...))``, remembered per Spec object (a Spec is immutable).

    The data is shared by every run planned from ``spec``: callers must not mutate it.
    """
    found = _MEMO.get(id(spec))
    if found is not None and found[0]() is spec:
        return found[1], found[2]
    data = spec_to_data(spec)
    text = digest(data)
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.clear()
    _MEMO[id(spec)] = (weakref.ref(spec), data, text)
    return data, text


#: The ``@spec`` record a run keeps: ``{"key": "@spec", "data": spec data, "inputs": the run's inputs}``.
SPEC_SHAPE = Shape("a spec record", {"key": str, "data": dict}, ("data",))


def unpack_spec_record(record: Any, run_id: str) -> tuple[dict[str, Any], Any]:
    """(spec data, inputs) of run ``run_id``'s ``@spec`` record; StoreError naming the run and
    the record when it is not the shape the engine writes (an edit or damage to the store)."""
    check_shape(record, SPEC_SHAPE, lambda: f"the record {SPEC_KEY!r} of run {run_id!r}")
    return record["data"], record.get("inputs")


def spec_to_data(spec: Spec) -> dict[str, Any]:
    """The YAML-shaped data that :func:`build_spec` turns back into an equal Spec."""
    flows: dict[str, Any] = {"entry": spec.entry}
    for name, flow in spec.flows.items():
        flows[name] = _flow(flow)
    return {
        "version": spec.version,
        "contracts": {name: dict(decl.fields) for name, decl in spec.contracts.items()},
        "flows": flows,
    }


def digest(data: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(data).encode()).hexdigest()


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _flow(flow: Flow) -> dict[str, Any]:
    out: dict[str, Any] = {"input": dict(flow.input)}
    if flow.output is not None:
        out["output"] = {"from": flow.output.from_, "contract": flow.output.contract}
    if flow.max_rounds is not None:
        out["max_rounds"] = flow.max_rounds
    if flow.budget is not None:
        out["budget"] = _budget(flow.budget)
    if flow.carry:
        out["carry"] = {
            name: {"initial": var.initial, **({"on_revise": dict(var.on_revise)} if var.on_revise else {})}
            for name, var in flow.carry.items()
        }
    out["steps"] = [_step(step) for step in flow.steps]
    return out


def _step(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {"id": step.id}
    if step.after:
        out["after"] = list(step.after)
    _put(out, "when", step.when)
    if step.kind == "do":
        out["do"] = step.do
        _put(out, "agent", step.agent)
    elif step.kind == "set":
        out["set"] = dict(step.set or {})
    elif step.kind == "gate" and step.gate is not None:
        gate = {"on_approve": step.gate.on_approve, "on_revise": step.gate.on_revise,
                "on_kill": step.gate.on_kill}
        if step.gate.max_rounds is not None:
            gate["max_rounds"] = step.gate.max_rounds
        out["gate"] = gate
    elif step.kind == "fanout" and step.fanout is not None:
        out["fanout"] = _fanout(step)
    elif step.kind == "run":
        out["run"] = step.run
        out["with"] = step.with_
    elif step.kind == "evaluate" and step.evaluate is not None:
        evaluate = step.evaluate
        out["evaluate"] = {"command": evaluate.command, "timeout_ms": evaluate.timeout_ms}
        _put(out["evaluate"], "in", evaluate.in_)
    _put(out, "out", step.out)
    if step.ensure:
        out["ensure"] = [_ensure(e) for e in step.ensure]
    _put(out, "attempts", step.attempts)
    if step.iterate is not None:
        out["iterate"] = {"max": step.iterate.max, "until": step.iterate.until}
    if step.budget is not None:
        out["budget"] = _budget(step.budget)
    _put(out, "on_fail", step.on_fail)
    return out


def _fanout(step: Step) -> dict[str, Any]:
    fan = step.fanout
    assert fan is not None
    stages = []
    for stage in fan.stages:
        body: dict[str, Any] = {"do": stage.do}
        for key in ("agent", "out", "attempts", "when"):
            _put(body, key, getattr(stage, key))
        if stage.ensure:
            body["ensure"] = [_ensure(e) for e in stage.ensure]
        stages.append(body)
    out: dict[str, Any] = {"over": fan.over, "steps": stages}
    for key in ("concurrency", "isolation", "require", "merge"):
        _put(out, key, getattr(fan, key))
    if fan.pre_merge:
        out["pre_merge"] = list(fan.pre_merge)
    out["dispatch"] = fan.dispatch
    return out


def _ensure(ensure: Ensure) -> dict[str, Any]:
    if ensure.kind == "expr":
        return {"expr": ensure.expr}
    if ensure.kind == "file_exists":
        return {"file_exists": ensure.path}
    if ensure.kind == "file_contains":
        return {"file_contains": {"path": ensure.path, "text": ensure.text}}
    return {"judged": {"statement": ensure.statement, "stakes": ensure.stakes}}


def _budget(budget: Budget) -> dict[str, Any]:
    return dict(budget.limits())


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value
