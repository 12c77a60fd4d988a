"""Every string of a spec that names something or embeds a sublanguage, with its YAML path.

Navigation, rename, semantic tokens and inlay hints all need the same walk over the IR: which
strings are ``${...}`` templates, which are expressions, which name a step, a contract or a
flow, and which are contract types. This module is that walk, once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from lockgate.dsl.diagnostics import YamlPath
from lockgate.dsl.ir import Ensure, Flow, Spec, Stage, Step

Role = Literal["template", "expression", "step", "contract", "flow", "type", "step_id", "gate_key"]


@dataclass(frozen=True, slots=True)
class Field:
    """One string at ``path``; ``role`` says what it holds. ``flow``/``step``/``stage`` locate it
    (for scoping names and bindings)."""

    path: YamlPath
    value: str
    role: Role
    flow: Flow | None = None
    step: Step | None = None
    stage: Stage | None = None

    @property
    def binds_step_outputs(self) -> bool:
        """In ``when`` and ``set`` of a step, and in a fanout stage's ``when`` (§5.4), ``result``
        is the map step id -> output of the flow's steps."""
        return self.role == "expression" and (
            self.path[-1] == "when" or (self.stage is None and len(self.path) > 1 and self.path[-2] == "set")
        )


def walk(spec: Spec) -> Iterator[Field]:
    """All fields of ``spec``: those outside steps, then every flow's steps."""
    yield from walk_header(spec)
    for flow in spec.flows.values():
        for step in flow.steps:
            yield from walk_step(flow, step)


def walk_header(spec: Spec) -> Iterator[Field]:
    """The fields outside steps: ``entry``, contract and input types, flow outputs, carry."""
    if spec.entry is not None:
        yield Field(("flows", "entry"), spec.entry, "flow")
    for name, decl in spec.contracts.items():
        for field_name, type_text in decl.fields.items():
            if isinstance(type_text, str):
                yield Field(("contracts", name, field_name), type_text, "type")
    for flow in spec.flows.values():
        yield from _flow(flow)


def walk_step(flow: Flow, step: Step) -> Iterator[Field]:
    """The fields of one step (its fanout stages included)."""
    yield from _step(flow, step)


def field_at(spec: Spec, path: YamlPath) -> Field | None:
    """The template or expression field at ``path``, walking only the step (or the part of the
    document outside steps) that holds it."""
    path = tuple(path)
    step = step_at(spec, path)
    fields = walk_step(*step) if step is not None else walk_header(spec)
    return next((f for f in fields if f.path == path and f.role in ("template", "expression")), None)


def step_at(spec: Spec, path: YamlPath) -> tuple[Flow, Step] | None:
    """The flow and step holding ``path`` (``("flows", name, "steps", index, ...)``)."""
    if len(path) < 4 or path[0] != "flows" or path[2] != "steps" or not isinstance(path[3], int):
        return None
    flow = spec.flows.get(str(path[1]))
    if flow is None or not 0 <= path[3] < len(flow.steps):
        return None
    return flow, flow.steps[path[3]]


def inputs_to_pass(spec: Spec, caller: Flow, step: Step, given: Any) -> list[tuple[str, Any, bool]]:
    """The inputs of the flow ``step`` runs that ``given`` (its ``with`` keys so far) lacks, as
    (name, declared type, whether ``caller`` has an input of that name to pass on)."""
    callee = spec.flows.get(step.run) if step.run else None
    if callee is None:
        return []
    return [(name, type_text, name in caller.input) for name, type_text in callee.input.items()
            if isinstance(name, str) and name not in given]


def _flow(flow: Flow) -> Iterator[Field]:
    for name, type_text in flow.input.items():
        if isinstance(type_text, str):
            yield Field((*flow.at, "input", name), type_text, "type", flow)
    if flow.output is not None:
        if flow.output.from_ is not None:
            yield Field((*flow.output.at, "from"), flow.output.from_, "template", flow)
        if flow.output.contract is not None:
            yield Field((*flow.output.at, "contract"), flow.output.contract, "contract", flow)
    for carry in flow.carry.values():
        if carry.initial is not None:
            yield Field((*carry.at, "initial"), carry.initial, "template", flow)
        for gate, source in carry.on_revise.items():
            yield Field((*carry.at, "on_revise", gate), str(gate), "gate_key", flow)
            if isinstance(source, str):
                yield Field((*carry.at, "on_revise", gate), source, "template", flow)


def _step(flow: Flow, step: Step) -> Iterator[Field]:
    at = step.at
    if step.id is not None:
        yield Field((*at, "id"), step.id, "step_id", flow, step)
    for i, target in enumerate(step.after):
        yield Field((*at, "after", i), target, "step", flow, step)
    if step.when is not None:
        yield Field((*at, "when"), step.when, "expression", flow, step)
    if step.do is not None:
        yield Field((*at, "do"), step.do, "template", flow, step)
    for key, value in (step.set or {}).items():
        if isinstance(value, str):
            yield Field((*at, "set", key), value, "expression", flow, step)
    if step.out is not None:
        yield Field((*at, "out"), step.out, "contract", flow, step)
    yield from _ensures(flow, step, None, step.ensure)
    if step.iterate is not None and step.iterate.until is not None:
        yield Field((*step.iterate.at, "until"), step.iterate.until, "expression", flow, step)
    if step.on_fail is not None:
        yield Field((*at, "on_fail"), step.on_fail, "step", flow, step)
    if step.gate is not None:
        for route, target in (("on_approve", step.gate.on_approve), ("on_revise", step.gate.on_revise),
                              ("on_kill", step.gate.on_kill)):
            if target is not None:
                yield Field((*step.gate.at, route), target, "step", flow, step)
    if step.run is not None:
        yield Field((*at, "run"), step.run, "flow", flow, step)
    if step.run is not None and step.with_ is not None:
        for path, text in _strings(step.with_, (*at, "with")):
            yield Field(path, text, "template", flow, step)
    if step.kind == "evaluate" and step.evaluate is not None and step.evaluate.in_ is not None:
        yield Field((*step.evaluate.at, "in"), step.evaluate.in_, "template", flow, step)
    if step.fanout is not None:
        yield from _fanout(flow, step)


def _fanout(flow: Flow, step: Step) -> Iterator[Field]:
    fanout = step.fanout
    assert fanout is not None
    if fanout.over is not None:
        yield Field((*fanout.at, "over"), fanout.over, "template", flow, step)
    for stage in fanout.stages:
        if stage.do is not None:
            yield Field((*stage.at, "do"), stage.do, "template", flow, step, stage)
        if stage.when is not None:
            yield Field((*stage.at, "when"), stage.when, "expression", flow, step, stage)
        if stage.out is not None:
            yield Field((*stage.at, "out"), stage.out, "contract", flow, step, stage)
        yield from _ensures(flow, step, stage, stage.ensure)


def _ensures(flow: Flow, step: Step, stage: Stage | None, ensures: tuple[Ensure, ...]) -> Iterator[Field]:
    for ensure in ensures:
        if ensure.kind == "expr" and ensure.expr is not None:
            yield Field((*ensure.at, "expr"), ensure.expr, "expression", flow, step, stage)


def _strings(value: Any, at: YamlPath) -> Iterator[tuple[YamlPath, str]]:
    if isinstance(value, str):
        yield at, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, (*at, i))
