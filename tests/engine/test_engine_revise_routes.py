"""A gate's revise resets a region whose steps a route activated: a route taken from outside the
region still holds, so those steps run again on the reworked input (a revise means "redo from
there"); a route taken inside the region is decided again. Before, the reset cleared every
route and the engine skipped such steps as never routed, so the revise redid nothing."""

from __future__ import annotations

from typing import Any

from lockgate.engine import Engine

HEAD = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
"""

REVISE_TO_APPROVED_TARGET = HEAD + """    output: {from: "${last.output}", contract: Note}
    max_rounds: 3
    steps:
      - id: plan
        do: "plan ${input.topic}"
        out: Note
      - id: plan_ok
        after: [plan]
        gate: {on_approve: impl, on_revise: null, on_kill: null}
      - id: impl
        do: "implement ${plan.output.text}"
        out: Note
      - id: review
        after: [impl]
        gate: {on_approve: last, on_revise: impl, on_kill: null}
      - id: last
        do: "ship ${impl.output.text}"
        out: Note
"""

APPROVED_GATE_REVISES = HEAD + """    output: {from: "${last.output}", contract: Note}
    max_rounds: 3
    steps:
      - id: first_review
        gate: {on_approve: second_review, on_revise: null, on_kill: null}
      - id: draft
        do: "draft ${input.topic}"
        out: Note
      - id: second_review
        after: [draft]
        gate: {on_approve: null, on_revise: draft, on_kill: null}
      - id: last
        after: [second_review]
        do: "publish ${draft.output.text}"
        out: Note
"""

RECOVERY_OUTSIDE_FAILURE = HEAD + """    output: {from: "${fix.output}", contract: Note}
    max_rounds: 2
    steps:
      - id: probe
        do: "probe"
        out: Note
        attempts: 1
        on_fail: fix
      - id: prep
        do: "prep"
        out: Note
      - id: fix
        after: [prep]
        do: "fix using ${prep.output.text}"
        out: Note
      - id: review
        after: [fix]
        gate: {on_approve: null, on_revise: prep, on_kill: null}
"""

ROUTER_INSIDE_REGION = HEAD + """    output: {from: "${draft.output}", contract: Note}
    max_rounds: 2
    steps:
      - id: draft
        do: "draft"
        out: Note
      - id: check
        after: [draft]
        gate: {on_approve: ship, on_revise: null, on_kill: shelve}
      - id: ship
        set: {text: "'shipped'"}
        out: Note
      - id: shelve
        set: {text: "'shelved'"}
        out: Note
      - id: review
        after: [ship, shelve]
        gate: {on_approve: null, on_revise: draft, on_kill: null}
"""


def _ready(engine: Engine, run: str, step: str) -> dict[str, Any]:
    entries = {e["step_id"]: e for e in engine.status(run).get("ready", [])}
    assert step in entries, f"{step} not ready; ready={sorted(entries)}"
    return entries[step]


def _report(engine: Engine, run: str, step: str, text: str, failure: str | None = None) -> dict[str, Any]:
    entry = _ready(engine, run, step)
    value = None if failure else {"text": text}
    return engine.step_done(run, step, value, entry["token"], failure=failure)


def _decide(engine: Engine, run: str, step: str, decision: str) -> dict[str, Any]:
    gates = {g["step_id"]: g for g in engine.status(run).get("gates", [])}
    assert step in gates, f"{step} not waiting; waiting={sorted(gates)}"
    return engine.gate_resolve(run, step, decision, f"{decision} it", "test", gates[step]["token"])


def _statuses(engine: Engine, run: str) -> dict[str, str]:
    return {t["step_id"]: t["status"] for t in engine.audit(run)["trace"]}


def _skipped(engine: Engine, run: str) -> list[str]:
    return [e["step_id"] for e in engine.audit(run)["events"] if e["type"] == "skipped"]


def test_a_revise_to_a_step_a_gate_approved_into_runs_it_again() -> None:
    engine = Engine()
    run = engine.plan(REVISE_TO_APPROVED_TARGET, {"topic": "t"})["run_id"]
    _report(engine, run, "plan", "p")
    _decide(engine, run, "plan_ok", "approve")
    _report(engine, run, "impl", "v1")
    _decide(engine, run, "review", "revise")
    again = _ready(engine, run, "impl")
    assert again["task"] == "implement p" and again["revision"]["note"] == "revise it"
    assert _statuses(engine, run)["review"] == "pending" and "impl" not in _skipped(engine, run)
    _report(engine, run, "impl", "v2")
    _decide(engine, run, "review", "approve")
    assert _ready(engine, run, "last")["task"] == "ship v2"
    done = _report(engine, run, "last", "out")
    assert done["status"] == "complete" and done["output"] == {"text": "out"}
    trace = {t["step_id"]: t for t in engine.audit(run)["trace"]}
    assert trace["impl"]["status"] == "succeeded" and trace["impl"]["output"] == {"text": "v2"}


def test_a_gate_another_gate_approved_into_asks_again_after_its_own_revise() -> None:
    engine = Engine()
    run = engine.plan(APPROVED_GATE_REVISES, {"topic": "t"})["run_id"]
    _report(engine, run, "draft", "v1")
    _decide(engine, run, "first_review", "approve")
    _decide(engine, run, "second_review", "revise")
    assert _statuses(engine, run)["second_review"] == "pending"
    assert [e["step_id"] for e in engine.status(run)["ready"]] == ["draft"]
    waiting = _report(engine, run, "draft", "v2")
    assert waiting["status"] == "await_gate" and waiting["step_id"] == "second_review"
    assert _statuses(engine, run)["last"] == "pending" and not _skipped(engine, run)
    _decide(engine, run, "second_review", "approve")
    assert _ready(engine, run, "last")["task"] == "publish v2"
    done = _report(engine, run, "last", "out")
    assert done["status"] == "complete" and done["output"] == {"text": "out"}


def test_a_recovery_step_whose_failure_lies_outside_the_reset_runs_again() -> None:
    engine = Engine()
    run = engine.plan(RECOVERY_OUTSIDE_FAILURE, {"topic": "t"})["run_id"]
    _report(engine, run, "probe", "", failure="broken")
    _report(engine, run, "prep", "p1")
    assert _ready(engine, run, "fix")["task"] == "fix using p1"
    _report(engine, run, "fix", "fixed p1")
    _decide(engine, run, "review", "revise")
    _report(engine, run, "prep", "p2")
    again = _ready(engine, run, "fix")
    assert again["task"] == "fix using p2" and "broken" in again["previous_failure"]["reason"]
    assert "fix" not in _skipped(engine, run)
    _report(engine, run, "fix", "fixed p2")
    done = _decide(engine, run, "review", "approve")
    assert done["status"] == "complete" and done["output"] == {"text": "fixed p2"}
    assert _statuses(engine, run)["probe"] == "failed"


def test_a_route_taken_inside_the_reset_region_is_decided_again() -> None:
    engine = Engine()
    run = engine.plan(ROUTER_INSIDE_REGION, {"topic": "t"})["run_id"]
    _report(engine, run, "draft", "d1")
    _decide(engine, run, "check", "approve")
    assert {k: v for k, v in _statuses(engine, run).items() if k in ("ship", "shelve")} == {
        "ship": "succeeded", "shelve": "skipped"}
    _decide(engine, run, "review", "revise")
    _report(engine, run, "draft", "d2")
    _decide(engine, run, "check", "kill")
    statuses = _statuses(engine, run)
    assert (statuses["ship"], statuses["shelve"]) == ("skipped", "succeeded")
    done = _decide(engine, run, "review", "approve")
    assert done["status"] == "complete" and done["output"] == {"text": "d2"}
