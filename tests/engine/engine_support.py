"""Helpers for the engine tests: a consumer that drives the protocol with scripted results."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.engine import Engine

TERMINAL = ("complete", "error", "killed", "cancelled")


@dataclass(frozen=True)
class Fail:
    """A scripted agent failure (reported as ``failure``)."""

    message: str


@dataclass(frozen=True)
class Usage:
    """A scripted result with usage to report."""

    output: Any
    usage: Mapping[str, Any]


class Script:
    """Scripted agent: per step id (fanout items by ``<fanout>/*`` or ``<fanout>/<i>``) a list of
    results consumed in order (the last one repeats) or a callable ``entry -> result``."""

    def __init__(self, plan: Mapping[str, Any]) -> None:
        self.plan = {k: (list(v) if isinstance(v, list) else v) for k, v in plan.items()}
        self.calls: list[str] = []

    def __call__(self, entry: Mapping[str, Any]) -> Any:
        key = entry["step_id"]
        self.calls.append(key)
        found = self.plan.get(key)
        if found is None and "/" in key:
            found = self.plan.get(key.rsplit("/", 1)[0] + "/*")
        if found is None:
            raise AssertionError(f"no scripted result for {key}")
        if callable(found):
            return found(entry)
        return found.pop(0) if len(found) > 1 else found[0]


def drive(engine: Engine, run_id: str, agent: Callable[[Mapping[str, Any]], Any],
          decide: Callable[[Mapping[str, Any]], tuple[str, str]] | Mapping[str, list[str]] | None = None,
          limit: int = 2000) -> dict[str, Any]:
    """Drive a run to a terminal status: run every outstanding dispatch with ``agent``, decide
    gates with ``decide`` (a callable or step id -> decisions in order)."""
    decisions = {k: list(v) for k, v in decide.items()} if isinstance(decide, Mapping) else None
    resp = engine.status(run_id)
    for _ in range(limit):
        if resp["status"] in TERMINAL:
            return resp
        if resp["status"] != "await_gate":
            entry = resp["ready"][0] if resp["ready"] else resp
            report(engine, run_id, entry, agent(entry))
        else:
            gate = resp["gates"][0]
            if decisions is not None:
                outcome = decisions[gate["step_id"]].pop(0)
                note = f"scripted {outcome}"
            elif decide is not None:
                outcome, note = decide(gate)  # type: ignore[operator]
            else:
                outcome, note = "approve", "ok"
            engine.gate_resolve(run_id, gate["step_id"], outcome, note, "test", gate["token"])
        resp = engine.status(run_id)
    raise AssertionError("the run did not finish")


def report(engine: Engine, run_id: str, entry: Mapping[str, Any], value: Any) -> dict[str, Any]:
    if isinstance(value, Fail):
        return engine.step_done(run_id, entry["step_id"], None, entry["token"], failure=value.message)
    if isinstance(value, Usage):
        return engine.step_done(run_id, entry["step_id"], value.output, entry["token"], usage=value.usage)
    return engine.step_done(run_id, entry["step_id"], value, entry["token"])
