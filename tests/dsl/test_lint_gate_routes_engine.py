"""The gate-route lints (LG902, LG908) say what the engine does: each shape is linted and run
through the engine with every gate decision, and the two must agree.

The engine's reading (lockgate/engine/gates.py, advance.py): a gate route target the decision
did not take is skipped; a null ``on_approve`` completes only the gate at the root (its
dependents run) but completes the whole subflow inside one (semantics §6.7); a null
``on_kill`` fails the run or the run step.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from lockgate.dsl.loader import load
from lockgate.engine import Engine
from lockgate.engine.store import MemoryStore

NEVER_RUNS = re.compile(r"^step '([^']+)' can never run when flow '([^']+)' runs as a subflow")


def _set(sid: str, after: str | None = None) -> str:
    extra = f"\n  after: [{after}]" if after else ""
    return f"- id: {sid}{extra}\n  set: {{text: \"'{sid}'\"}}\n  out: Note\n"


def _gate(approve: str | None, kill: str | None) -> str:
    def route(target: str | None) -> str:
        return target or "null"
    return (f"- id: g\n  after: [first]\n"
            f"  gate: {{on_approve: {route(approve)}, on_revise: null, on_kill: {route(kill)}}}\n")


def _body(approve: str | None, kill: str | None, tail: str) -> str:
    """A flow body: ``first``, then gate ``g`` with the routes given, then ``tail``'s steps."""
    steps = _set("first") + _gate(approve, kill) + tail
    return ("input: {topic: string}\n"
            "output: {from: \"${first.output}\", contract: Note}\n"
            "steps:\n" + textwrap.indent(steps, "  "))


def at_root(body: str) -> str:
    return "version: 1\ncontracts: {Note: {text: string}}\nflows:\n  entry: main\n  main:\n" + textwrap.indent(body, "    ")


def in_subflow(body: str) -> str:
    """Entry flow ``main`` runs flow ``sub`` (whose body is ``body``) as its one step ``child``."""
    main = ("input: {topic: string}\n"
            "output: {from: \"${child.output}\", contract: Note}\n"
            "steps:\n"
            "  - {id: child, run: sub, with: {topic: \"${input.topic}\"}}\n")
    return (at_root(main) + "  sub:\n" + textwrap.indent(body, "    "))


def lint(text: str) -> dict[str, list[str]]:
    """The messages of the gate-route lints, by code; the spec must have no error."""
    result = load(text)
    assert result.errors == [], result.errors
    found: dict[str, list[str]] = {}
    for d in result.diagnostics:
        if d.code in ("LG902", "LG908"):
            found.setdefault(d.code, []).append(d.message)
    return found


def decide(text: str, decision: str, flow: str | None = None) -> tuple[str, dict[str, str]]:
    """Run ``text`` (its entry flow, or ``flow`` as the root), give gate ``g`` ``decision`` and
    return the run's status and each step's status (subflow steps under their own ids)."""
    engine = Engine(store=MemoryStore())
    run = engine.plan(text, {"topic": "t"}, flow)["run_id"]
    (waiting,) = engine.status(run)["gates"]
    assert waiting["step_id"].rsplit("/", 1)[-1] == "g"
    engine.gate_resolve(run, waiting["step_id"], decision, "why", "test", waiting["token"])
    status = engine.status(run)["status"]
    steps = {t["step_id"].rsplit("/", 1)[-1]: t["status"] for t in engine.audit(run)["trace"]}
    return status, steps


def ran(text: str, flow: str | None = None) -> set[str]:
    """The steps that succeed under some gate decision (approve or kill)."""
    done: set[str] = set()
    for decision in ("approve", "kill"):
        done |= {sid for sid, status in decide(text, decision, flow)[1].items() if status == "succeeded"}
    return done


def never_run(text: str) -> set[str]:
    """The steps LG902 says can never run (in flow ``sub``)."""
    named = [NEVER_RUNS.match(m) for m in lint(text).get("LG902", [])]
    assert all(named), named
    return {m.group(1) for m in named if m and m.group(2) == "sub"}


def sub_steps(text: str) -> set[str]:
    return {step.id for step in load(text).ir.flows["sub"].steps}


# (approve route, kill route, steps after the gate)
SHAPES = {
    "null-null, a step after": (None, None, _set("last", "g")),
    "null-kill route, a step after": (None, "k", _set("k") + _set("last", "g")),
    "approve route-null, a step after": ("a", None, _set("a") + _set("last", "g")),
    "split routes": ("a", "k", _set("a") + _set("k")),
    "split routes, a step after": ("a", "k", _set("a") + _set("k") + _set("last", "g")),
}


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_at_the_root_every_step_runs_and_lg902_says_nothing(shape):
    text = at_root(_body(*SHAPES[shape]))
    assert "LG902" not in lint(text)
    body_ids = {step.id for step in load(text).ir.flows["main"].steps}
    assert ran(text) == body_ids


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_in_a_subflow_lg902_names_exactly_the_steps_that_never_run(shape):
    text = in_subflow(_body(*SHAPES[shape]))
    assert never_run(text) == sub_steps(text) - ran(text)


def test_a_null_approve_ends_the_subflow_but_not_the_same_flow_run_as_the_root():
    text = in_subflow(_body(None, None, _set("last", "g")))
    assert never_run(text) == {"last"}
    status, steps = decide(text, "approve")
    assert (status, steps["g"], steps["last"]) == ("complete", "succeeded", "pending")
    # the message's 'when ... runs as a subflow' holds: run on its own, the flow runs 'last'
    status, steps = decide(text, "approve", flow="sub")
    assert (status, steps["last"]) == ("complete", "succeeded")


def test_a_kill_route_releases_the_gates_dependents_in_a_subflow():
    text = in_subflow(_body(None, "k", _set("k") + _set("last", "g")))
    assert "LG902" not in lint(text)
    assert decide(text, "approve")[1]["last"] == "pending"
    assert decide(text, "kill")[1]["last"] == "succeeded"


@pytest.mark.parametrize("place", [at_root, in_subflow], ids=["root", "subflow"])
def test_split_routes_skip_the_branch_not_taken_as_lg908_says(place):
    text = place(_body("a", "k", _set("a") + _set("k")))
    (message,) = lint(text)["LG908"]
    assert "Lockgate skips the branch not taken" in message and "reference engine" in message
    for decision, taken, skipped in (("approve", "a", "k"), ("kill", "k", "a")):
        status, steps = decide(text, decision)
        assert (status, steps[taken], steps[skipped]) == ("complete", "succeeded", "skipped")


def test_routes_to_one_step_or_a_null_route_are_not_split():
    for approve, kill in (("a", "a"), ("a", None), (None, "a")):
        assert "LG908" not in lint(at_root(_body(approve, kill, _set("a"))))
