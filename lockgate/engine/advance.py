"""Readiness and the advance loop, plus the failure path every construct shares.

A route target (of ``on_fail``, ``on_approve`` or ``on_kill``) waits until a route activates it,
and is skipped once every step that could route to it is terminal without doing so (so the branch
a gate did not take does not strand the run). A revise's reset keeps a route taken from outside
its region (see ``gates.reset_region``), so such a step runs again instead of being skipped.

A dependency that failed and was routed to its ``on_fail`` step counts as satisfied for the
recovery step itself (which may list it in ``after``) and for a step that also depends on that
recovery step (it joins both branches, as the source document's routing example does), and skips
any other dependent. A failure that was not routed ends the scope anyway.

``advance`` works off a queue of keys to (re)consider, fed by whatever changed: a step that
became terminal pushes its dependents and its ``on_fail`` target, a route pushes its target, a
reset pushes its region. Each candidate's own dependencies are checked (O(in-degree)), so a
transition costs the size of its neighbourhood, not of the flow.
"""

from __future__ import annotations

from typing import Any

from ..dsl.contracts import MAX_VIOLATIONS
from ..dsl.expr.equality import json_equal
from ..dsl.refs import Ref, render_text, walk_path
from ..dsl.refsyntax import format_path
from ..dsl.values import UNDEFINED
from ..errors import RefError
from . import budget, carry
from .compiled import CStep
from .ensures import contract_violations, first_failed_ensure, value_or_false, when_skips
from .live import LiveRun, Located, Scope
from .model import (
    FAILED,
    PENDING,
    RUN_COMPLETE,
    RUN_RUNNING,
    RUNNING,
    SATISFIED,
    SKIPPED,
    SUCCEEDED,
    TERMINAL,
    WAITING_GATE,
    StepState,
    now,
)


def advance(run: LiveRun) -> None:
    """Process the work queue until nothing more can start, then settle the root if it is done."""
    while (run.work or run.to_promote) and run.header.status == RUN_RUNNING:
        if not run.work:
            fanout.promote(run, run.steps[run.to_promote.pop()])
            continue
        key = run.work.popleft()
        st = run.steps.get(key)
        if st is not None and st.status == PENDING and not st.dropped:
            _consider(run, run.locate(key), st)
    if run.header.status != RUN_RUNNING:
        return
    if run.open.get("", 0) == 0:
        complete_root(run)
    elif not run.outstanding and not run.waiting and not run.evaluating:
        stuck = [k for k in run.root.flow.order if run.steps[k].status not in TERMINAL]
        run.fail_run("no_runnable_steps", "no runnable steps remain", pending=stuck)


#: Why a route target no route went to is skipped (its skipped event, and ``why``).
NO_ROUTE_TAKEN = "no route to this step was taken"


def _consider(run: LiveRun, loc: Located, st: StepState) -> None:
    if loc.index is not None:
        fanout.promote(run, run.steps[loc.cstep.id])
        return
    scope, cstep = loc.scope, loc.cstep
    if scope.parent is not None and run.steps[scope.parent].status != RUNNING:
        return
    if cstep.routed_only and st.routed is None:
        if all(run.steps[scope.prefix + r].status in TERMINAL for r in (*cstep.fail_routers, *cstep.gate_routers)):
            skip(run, scope, cstep, st, NO_ROUTE_TAKEN, _taken_instead(run, scope, cstep))
        return
    untaken = branches_not_taken(run, scope, cstep)
    if untaken is None:
        return
    if untaken:
        cut = untaken_by(run, scope, cstep, untaken)
        if cut is not None:
            dep, taken = cut
            skip(run, scope, cstep, st, untaken_reason(run, scope, dep, cstep.id), taken)
            return
    if cstep.when is not None:
        why = _when_skips(run, scope, cstep)
        if why is not None:
            skip(run, scope, cstep, st, why)
            return
    kind = cstep.kind
    if kind == "do":
        issue_task(run, loc, st)
    elif kind == "set":
        _run_set(run, loc, st)
    elif kind == "gate":
        run.issue(st, WAITING_GATE)
        run.event("gate_waiting", st.key, round=run.header.rounds)
    elif kind == "fanout":
        fanout.start_fanout(run, loc, st)
    elif kind == "run":
        subflows.start_subflow(run, loc, st)
    elif kind == "evaluate":
        evaluate.start(run, loc, st)


def branches_not_taken(run: LiveRun, scope: Scope, cstep: CStep) -> list[tuple[str, list[str]]] | None:
    """The dependencies of ``cstep`` on a branch not taken, each with the steps taken instead of
    it: one that failed and was routed to its ``on_fail`` step (a step other than ``cstep``), or
    one skipped on such a branch. None while a dependency is still to settle."""
    steps, prefix = run.steps, scope.prefix
    untaken: list[tuple[str, list[str]]] = []
    for dep in cstep.deps:
        dst = steps[prefix + dep]
        status = dst.status
        if status not in SATISFIED:
            target = scope.flow.steps[dep].step.on_fail if status == FAILED else None
            if not target:
                return None
            if target != cstep.id:  # the failed step's own branch: its on_fail target was taken instead
                untaken.append((dep, [target]))
        elif dst.untaken is not None:
            untaken.append((dep, dst.untaken))
    return untaken


def untaken_reason(run: LiveRun, scope: Scope, dep: str, step_id: str) -> str:
    """Why step ``step_id`` is skipped with dependency ``dep``'s branch (the words of its
    skipped event). A route target can be skipped on the very branch its route took: it waits
    on a step after its router, which that route left behind (lint LG910 warns of it)."""
    dst = run.steps[scope.prefix + dep]
    if dst.status == FAILED:
        return f"dependency {dep} failed and was routed to its on_fail step"
    taken = dst.untaken or ()
    routed = run.steps[scope.prefix + step_id].routed
    if routed is not None and step_id in taken:
        how = "failure" if "failure" in routed else f"{routed['decision']} decision"
        return (f"dependency {dep} never runs: it comes after {routed['from']}, whose {how} was routed "
                "to this step instead")
    if dep in taken:
        return f"dependency {dep} was skipped on the route taken to it"
    return f"dependency {dep} is on a branch not taken"


def _taken_instead(run: LiveRun, scope: Scope, cstep: CStep) -> list[str] | None:
    """What was taken instead of ``cstep``, a route target no route went to, when it is on a
    branch not taken: the route its gate took (the gate itself for a null ``on_approve``, whose
    dependents go on), or what was taken instead of a router that is on such a branch itself.
    None when nothing was: an ``on_fail`` target whose steps did not fail, or whose gate its
    ``when`` skipped, is skipped as the reference skips it, releasing what follows (§6.3, §6.6)."""
    taken: list[str] = []
    on_branch = False
    steps, prefix = run.steps, scope.prefix
    for router in (*cstep.fail_routers, *cstep.gate_routers):
        rst = steps[prefix + router]
        if rst.untaken is not None:
            taken.extend(rst.untaken)
            on_branch = True
        elif router in cstep.gate_routers and rst.status != SKIPPED and rst.decisions:
            gate = scope.flow.steps[router].step.gate
            chosen = gate.on_approve if rst.decisions[-1]["decision"] == "approve" else gate.on_kill  # type: ignore[union-attr]
            taken.append(chosen or router)
            on_branch = True
    return list(dict.fromkeys(taken)) if on_branch else None


def untaken_by(run: LiveRun, scope: Scope, cstep: CStep,
               untaken: list[tuple[str, list[str]]]) -> tuple[str, list[str]] | None:
    """Whether ``cstep`` is on a branch not taken, given its dependencies ``untaken`` that are
    (each with the steps taken instead of it): (the first of them it does not join, the steps
    taken instead), or None. Such a dependency is a step that failed and was routed to its
    ``on_fail`` step, or one skipped on a branch not taken (a gate's route target not taken, and
    what follows it). A step joins it when it also waits on a step that ran after, or being, a
    step taken instead (the source document's ``publish: after: [verify, recover]``). Where
    the reference leaves such a branch pending for ever (semantics §8.12, §8.13), Lockgate
    skips it, whole: a skip otherwise releases its dependents (§6.6), which would run the rest
    of the branch."""
    steps, prefix, flow = run.steps, scope.prefix, scope.flow
    ran = [dep for dep in cstep.deps if steps[prefix + dep].status in SATISFIED and steps[prefix + dep].untaken is None
           and (not flow.steps[dep].routed_only or _brought_in_by(run, scope, dep))]
    cut = [(dep, taken) for dep, taken in untaken if not any(_ran_after(run, scope, live).intersection(taken)
                                                             for live in ran)]
    if not cut:
        return None
    return cut[0][0], list(dict.fromkeys(t for _, taken in cut for t in taken))


def _ran_after(run: LiveRun, scope: Scope, step_id: str) -> set[str]:
    """``step_id`` and the steps it came after in this run: those it waits on (``after`` and
    references), in turn, and the routers that brought it in (:func:`_brought_in_by`). Unlike
    :meth:`CFlow.upstream` (every route declared to a step), a route its router did not take
    counts for nothing: the step no route went to is no way to join the branch of that router."""
    flow = scope.flow
    seen, stack = {step_id}, [step_id]
    while stack:
        sid = stack.pop()
        cstep = flow.steps[sid]
        routers = _brought_in_by(run, scope, sid) if cstep.routed_only else ()
        for before in (*cstep.deps, *routers):
            if before not in seen:
                seen.add(before)
                stack.append(before)
    return seen


def _brought_in_by(run: LiveRun, scope: Scope, step_id: str) -> list[str]:
    """The routers that brought route target ``step_id`` into the run: the one whose route
    started it, or, when none did, those skipped themselves (a skipped gate or failing step
    releases its route targets as a skip does: they are on its branch). Empty when its routers
    ran and went elsewhere (a step that did not fail, a gate deciding another way)."""
    steps, prefix = run.steps, scope.prefix
    routed = steps[prefix + step_id].routed
    if routed is not None:
        return [routed["from"]]
    cstep = scope.flow.steps[step_id]
    return [r for r in (*cstep.fail_routers, *cstep.gate_routers) if steps[prefix + r].status == SKIPPED]


def _when_skips(run: LiveRun, scope: Scope, cstep: CStep) -> str | None:
    """Why the step's ``when`` skips it, or None when it is true."""
    when = cstep.when
    return when_skips(when, {"result": run.result_map(scope, when.needs), "input": run.scope_input(scope)},
                      run.workspace())


# -- do -------------------------------------------------------------------------------------------


def issue_task(run: LiveRun, loc: Located, st: StepState) -> None:
    """Render the task, reserve one dispatch and mint a token (or fail the attempt)."""
    scope, cstep = loc.scope, loc.cstep
    try:
        task, inputs = render_task(run, scope, cstep.step.do or "")
    except RefError as exc:
        fail_attempt(run, loc, st, {"kind": "render", "reason": f"task render failed: {exc.message}",
                                    "violations": []})
        return
    over = budget.reserve(run, scope, st, cstep.budget)
    if over is not None and not _reserve_failed(run, loc, st, over):
        return
    st.task = task
    st.inputs = inputs
    run.issue(st)
    run.event("ready", st.key, attempt=len(st.attempts) + 1)


def _reserve_failed(run: LiveRun, loc: Located, st: StepState, over: budget.Ledger) -> bool:
    reason = budget.exhausted(over, dispatch=True)
    if over.level == "flow":
        run.fail_run("budget_exhausted", reason, st.key)
    elif over.level == "subflow":
        fail_parent(run, loc.scope, {"kind": "budget", "reason": reason, "violations": []})
    else:
        fail_attempt(run, loc, st, {"kind": "budget", "reason": reason, "violations": []})
    return False


def render_task(run: LiveRun, scope: Scope, text: str, item: Any = UNDEFINED,
                prev: Any = UNDEFINED) -> tuple[str, dict[str, Any]]:
    """The rendered ``do`` text and the resolved value of each reference in it."""
    inputs: dict[str, Any] = {}
    return render_text(text, resolver(run, scope, item, prev), inputs), inputs


def resolver(run: LiveRun, scope: Scope, item: Any = UNDEFINED, prev: Any = UNDEFINED) -> Any:
    inputs = run.scope_input(scope)
    carried = run.header.carry

    def resolve(ref: Ref) -> Any:
        kind = ref.kind
        if kind == "step":
            return walk_path(run.output_of(scope, ref.name or ""), ref.path)
        if kind == "input":
            return walk_path(inputs, ref.path)
        if kind == "carry":
            entry = carried.get(ref.name or "")
            if entry is None:
                raise RefError(f'carry variable "{ref.name}" is not materialised', ref.span)
            return walk_path(entry["value"], ref.path)
        return walk_path(item if kind == "item" else prev, ref.path)

    resolve.fate = lambda ref: carry.fate(run, scope, ref)  # type: ignore[attr-defined]  # for render errors
    return resolve


# -- set --------------------------------------------------------------------------------------------


def _run_set(run: LiveRun, loc: Located, st: StepState) -> None:
    scope, cstep = loc.scope, loc.cstep
    inputs = run.scope_input(scope)
    workspace = run.workspace()
    value, errors = {}, []
    for name, cexpr in cstep.set_exprs:
        value[name], error = value_or_false(cexpr, {"result": run.result_map(scope, cexpr.needs), "input": inputs},
                                            workspace)
        if error is not None:
            errors.append(f'set value {name} "{cexpr.source}" failed ({error}), so it is false')
    judged: list[dict[str, Any]] = []
    failure = check_result(run, scope, cstep.step.out, cstep.ensures, value, {"input": inputs}, judged=judged,
                           subject=(st.key, run.header.workspace, not run.irreversible))
    if judged and not spend_unbudgeted(run, loc, st, record_judged(run, st.key, judged)):
        return
    if failure is None:
        failure = output_source_failure(run, scope, cstep, value)
    if failure is not None and errors:  # the likely cause of the failure: say it first
        failure = {**failure, "reason": "; ".join([*errors, failure["reason"]])}
    st.attempts.append({"attempt": 1, "at": now(), "result": value, **({"failure": failure} if failure else {})})
    if failure is not None:
        st.failure = failure
        run.set_status(st, FAILED)
        run.event("result", st.key, attempt=1, failure=failure)
        run.failed_now.append((st.key, failure, False))
        reason = f"set step {cstep.id} failed: {failure['reason']}"
        if scope.parent is not None:
            fail_parent(run, scope, {"kind": "subflow", "reason": reason, "violations": failure["violations"]})
        else:
            run.fail_run("set_failed", reason, st.key, violations=failure["violations"])
        return
    succeed(run, loc, st, value)


def spend_unbudgeted(run: LiveRun, loc: Located, st: StepState, spend: dict[str, float]) -> bool:
    """Settle what a step without a budget of its own spent (judging a set step, an evaluate
    step's command time) in the flow's and the subflow's ledgers; False when one of them ran
    out (the step is failed, and the run or the parent step with it)."""
    if not spend:
        return True
    over = budget.charge(run, st.key, budget.ledgers(run, loc.scope, None, {}), spend)
    if over is None:
        return True
    run.set_status(st, FAILED)
    reason = budget.exhausted(over)
    if over.level == "flow":
        run.fail_run("budget_exhausted", reason, st.key, spent=dict(run.header.spent), budget=dict(run.root.flow.budget))
    else:
        fail_parent(run, loc.scope, {"kind": "budget", "reason": reason, "violations": []})
    return False


def check_result(run: LiveRun, scope: Scope, out: str | None, ensures: tuple, output: Any,
                 bindings: dict[str, Any], workspace: Any = None,
                 judged: list[dict[str, Any]] | None = None,
                 subject: tuple[str, str | None, bool] | None = None) -> dict[str, Any] | None:
    """Contract then ensures: the first failure as a failure dict (kind schema or ensure).
    ``judged`` collects the judged ensures asked and ``subject`` tells a judge which step it
    judges (see :func:`first_failed_ensure`)."""
    if out is not None:
        violations = contract_violations(run.cspec.contract(out), output)
        if violations:
            return {"kind": "schema", "reason": f"output does not match contract {out}: {summarise(violations)}",
                    "violations": violations}
    if ensures:
        violation = first_failed_ensure(ensures, {"result": output, **bindings},
                                        workspace if workspace is not None else run.workspace(), run.env.judge,
                                        judged, subject)
        if violation is not None:
            return {"kind": "ensure", "reason": violation["reason"], "violations": [violation]}
    return None


def record_judged(run: LiveRun, key: str, judged: list[dict[str, Any]]) -> dict[str, float]:
    """A ``judged`` event for every judged ensure asked, holding or not; what the judges spent
    (for the caller to settle like the step's own usage)."""
    spend: dict[str, float] = {}
    for record in judged:
        run.event("judged", key, **record)
        for name, amount in record.get("usage", {}).items():
            spend[name] = spend.get(name, 0) + amount
    return spend


def output_source_failure(run: LiveRun, scope: Scope, cstep: CStep, output: Any) -> dict[str, Any] | None:
    """When this step feeds its flow's ``output.from``, the flow output contract's verdict now."""
    ref = scope.flow.output_ref
    if ref is None or ref.name != cstep.id or scope.flow.output_contract is None:
        return None
    value = walk_path(output, ref.path)
    if value is UNDEFINED:
        return {"kind": "output", "reason": f"flow output {ref.raw} is unavailable in this result",
                "violations": [{"path": "result" + format_path(ref.path),
                                "message": f"missing: the flow output {ref.raw} is taken from here"}]}
    # paths from where the flow output is taken in this result (result.sub.v, not result.v)
    violations = contract_violations(run.cspec.contract(scope.flow.output_contract), value,
                                     "result" + format_path(ref.path))
    if violations:
        return {"kind": "schema", "reason": f"flow output does not match contract {scope.flow.output_contract}: "
                                            f"{summarise(violations)}",
                "violations": violations}
    return None


def summarise(violations: list[dict[str, str]], shown: int = 5) -> str:
    """The first ``shown`` contract violations as one line, saying how many more there are
    (a contract check stops at :data:`~lockgate.dsl.contracts.MAX_VIOLATIONS`)."""
    summary = "; ".join(f"{v['path']}: {v['message']}" for v in violations[:shown])
    more = len(violations) - shown
    if more <= 0:
        return summary
    counted = f" (the check stops at {MAX_VIOLATIONS})" if len(violations) >= MAX_VIOLATIONS else ""
    return f"{summary}; and {more} more{counted}"


# -- outcomes ---------------------------------------------------------------------------------------


def succeed(run: LiveRun, loc: Located, st: StepState, output: Any) -> None:
    st.output = output
    st.failure = None
    if st.token is not None:
        st.accepted = st.token
        st.token = None
    run.set_status(st, SUCCEEDED)
    run.event("result", st.key, attempt=len(st.attempts), result=output)
    if loc.scope.parent is None and run.root.flow.carry_sources:
        carry.materialise(run, loc.cstep.id)
    notify(run, loc, st)


def skip(run: LiveRun, scope: Scope, cstep: CStep, st: StepState, reason: str,
         untaken: list[str] | None = None) -> None:
    """Skip ``st`` for ``reason``; ``untaken``: it is on a branch not taken, these steps were
    taken instead (see :func:`untaken_by`)."""
    st.untaken = untaken
    st.skip_reason = reason
    run.set_status(st, SKIPPED)
    run.event("skipped", st.key, reason=reason)
    notify(run, Located(scope, cstep), st)


def notify(run: LiveRun, loc: Located, st: StepState) -> None:
    """Queue whatever a terminal step may release: dependents, its on_fail target, and the
    settlement of its subflow scope when it was the last open child."""
    prefix = loc.scope.prefix
    work = run.work
    for dep in loc.cstep.dependents:
        work.append(prefix + dep)
    step = loc.cstep.step
    if step.on_fail:
        work.append(prefix + step.on_fail)
    if step.gate is not None:
        for target in (step.gate.on_approve, step.gate.on_kill):
            if target:
                work.append(prefix + target)
    if loc.scope.parent is not None and run.open.get(prefix, 0) == 0:
        subflows.settle_subflow(run, loc.scope)


def fail_attempt(run: LiveRun, loc: Located, st: StepState, failure: dict[str, Any],
                 output: Any = UNDEFINED, forced: bool = False, usage: dict[str, Any] | None = None) -> None:
    """Record a failed attempt, then retry, route to ``on_fail``, or fail the scope."""
    n = len(st.attempts) + 1
    if output is not UNDEFINED and st.attempts:
        last = st.attempts[-1]
        if "result" in last and json_equal(last["result"], output):
            failure = {**failure, "reason": failure["reason"] + " (no retry: identical evidence)",
                       "identical_evidence": True}
            forced = True
    failure = {"attempt": n, **failure}
    record: dict[str, Any] = {"attempt": n, "at": now(), "failure": failure}
    if output is not UNDEFINED:
        record["result"] = output
    if usage:
        record["usage"] = usage
    st.attempts.append(record)
    st.failure = failure
    st.token = None
    run.event("result", st.key, attempt=n, failure=failure)
    retry = not forced and n < loc.cstep.max_attempts
    run.failed_now.append((st.key, failure, retry))
    if retry:
        run.set_status(st, PENDING)
        run.work.appendleft(st.key)
        return
    exhaust(run, loc, st, failure)


def exhaust(run: LiveRun, loc: Located, st: StepState, failure: dict[str, Any]) -> None:
    """A step's failure path is spent: route to on_fail, fail the subflow's parent, or the run."""
    run.set_status(st, FAILED)
    scope, cstep = loc.scope, loc.cstep
    target = cstep.step.on_fail
    if target:
        tst = run.steps[scope.prefix + target]
        tst.routed = {"from": cstep.id, "failure": failure}
        run.touch(tst)
        run.routed_now.append((st.key, tst.key, failure))
        run.event("routed", st.key, target=tst.key, failure=failure)
        run.work.append(tst.key)
    elif scope.parent is not None:
        fail_parent(run, scope, {"kind": "subflow", "reason": f"step {cstep.id} failed: {failure['reason']}",
                                 "violations": failure.get("violations", [])})
    else:
        run.fail_run("retries_exhausted", failure["reason"], st.key, violations=failure.get("violations", []),
                     attempts=len(st.attempts))
    notify(run, loc, st)


def fail_parent(run: LiveRun, scope: Scope, failure: dict[str, Any]) -> None:
    """A subflow failed: its parent run step suffers a forced (on_fail-eligible) failure."""
    assert scope.parent is not None
    parent = run.steps[scope.parent]
    if parent.status != RUNNING:
        return
    subflows.close_children(run, scope.prefix)
    fail_attempt(run, run.locate(scope.parent), parent, failure, forced=True)


def complete_root(run: LiveRun) -> None:
    """Every root step is terminal: resolve and check the flow output, and finish the run."""
    flow = run.root.flow
    ref = flow.output_ref
    value: Any = UNDEFINED
    if ref is not None:
        value = walk_path(run.output_of(run.root, ref.name or ""), ref.path)
    if value is UNDEFINED:
        run.fail_run("output_unavailable", f"flow output {ref.raw if ref else '(none)'} is unavailable")
        return
    if flow.output_contract:
        # paths from the value the flow output takes (s.output.sub.v)
        violations = contract_violations(run.cspec.contract(flow.output_contract), value,
                                         f"{ref.name}.output{format_path(ref.path)}")
        if violations:
            run.fail_run("output_invalid", f"flow output does not match contract {flow.output_contract}: "
                         f"{summarise(violations)}", violations=violations)
            return
    run.header.status = RUN_COMPLETE
    run.header.output = value
    run.header.finished_at = now()
    run.event("completed", None, output=value)


# Imported last: these modules build on the helpers above (import cycle), and a module reference
# resolved once costs nothing per transition, unlike an import statement inside a function.
from . import evaluate, fanout, subflows
