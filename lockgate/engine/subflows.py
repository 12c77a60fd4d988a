"""``run`` steps: a subflow runs inline, its steps keyed ``<run step>/<child id>``.

Starting renders ``with`` and checks it against the callee's input contract (a failure is a
forced, on_fail-eligible failure of the run step). When every child is terminal, or a child gate
approves with a null route, the callee's output is resolved and checked and becomes the run
step's output. A child failure that is not routed inside the child fails the run step.
"""

from __future__ import annotations

from typing import Any

from ..dsl.refs import render_value, walk_path
from ..dsl.values import UNDEFINED
from ..errors import RefError
from .advance import fail_attempt, output_source_failure, resolver, succeed
from .ensures import contract_violations
from .live import Located, LiveRun, Scope
from .model import READY, RUNNING, SKIPPED, WAITING_GATE, StepState, now


def start_subflow(run: LiveRun, loc: Located, st: StepState) -> None:
    cstep = loc.cstep
    callee = cstep.step.run or ""
    try:
        sub_input = render_value(cstep.step.with_ or {}, resolver(run, loc.scope))
    except RefError as exc:
        fail_attempt(run, loc, st, {"kind": "subflow", "reason": f"subflow input render failed: {exc.message}",
                                    "violations": []}, forced=True)
        return
    violations = contract_violations(run.cspec.input_contract(callee), sub_input, "input")
    if violations:
        fail_attempt(run, loc, st, {"kind": "schema", "reason": f"subflow {callee} input is invalid",
                                    "violations": violations}, forced=True)
        return
    run.drop_records(st.key + "/")
    st.sub_input = sub_input
    st.rounds = 0
    st.started_at = st.started_at or now()
    run.set_status(st, RUNNING)
    scope = run.scope_of(st.key)
    run.open[scope.prefix] = 0
    for sid in scope.flow.order:
        child = StepState(scope.prefix + sid)
        run.add_record(child)
        run.open[scope.prefix] += 1
        run.work.append(child.key)
    run.event("subflow_started", st.key, flow=callee, input=sub_input)
    if not scope.flow.order:
        settle_subflow(run, scope)


def settle_subflow(run: LiveRun, scope: Scope, early: bool = False) -> None:
    """The child is done (or a child gate approved with a null route): finish the run step."""
    assert scope.parent is not None
    parent = run.steps[scope.parent]
    if parent.status != RUNNING:
        return
    close_children(run, scope.prefix)
    loc = run.locate(scope.parent)
    flow = scope.flow
    ref = flow.output_ref
    value = walk_path(run.output_of(scope, ref.name or ""), ref.path) if ref is not None else UNDEFINED
    if value is UNDEFINED:
        fail_attempt(run, loc, parent, {"kind": "subflow", "reason": f"subflow {flow.name} output is unavailable",
                                        "violations": []}, forced=True)
        return
    if flow.output_contract:
        violations = contract_violations(run.cspec.contract(flow.output_contract), value)
        if violations:
            fail_attempt(run, loc, parent, {"kind": "schema", "violations": violations,
                                            "reason": f"subflow {flow.name} output does not match its contract"},
                         output=value, forced=True)
            return
    verdict = output_source_failure(run, loc.scope, loc.cstep, value)
    if verdict is not None:
        fail_attempt(run, loc, parent, verdict, output=value, forced=True)
        return
    parent.attempts.append({"attempt": len(parent.attempts) + 1, "at": now(), "result": value})
    run.event("subflow_completed", parent.key, early=early)
    succeed(run, loc, parent, value)


#: Why a subflow's steps still outstanding when it ends early are skipped.
SUBFLOW_ENDED = "the subflow ended"


def close_children(run: LiveRun, prefix: str) -> None:
    """Withdraw the child issuances still outstanding when a subflow ends early."""
    for key in [k for k in (*run.outstanding, *run.waiting, *run.evaluating) if k.startswith(prefix)]:
        child = run.steps[key]
        if child.status in (READY, WAITING_GATE, RUNNING):
            child.token = None
            child.skip_reason = SUBFLOW_ENDED
            run.set_status(child, SKIPPED)
            run.event("skipped", key, reason=SUBFLOW_ENDED)


def child_steps(run: LiveRun, run_key: str) -> list[StepState]:
    return run.children(run_key + "/")


def describe_sub(run: LiveRun, st: StepState) -> dict[str, Any]:
    return {"input": None if st.sub_input is UNDEFINED else st.sub_input, "rounds": st.rounds}
