"""JSON-ready protocol responses built from a live run.

Statuses: ``execute_step`` (a task or fanout item to run; ``ready`` lists every dispatch this call
issued, or all outstanding ones for plan/resume/status; a dispatch of work a gate's revise sent
back carries ``revision: {gate, note, round}``; the next round of an ``iterate`` step whose
``until`` did not hold for the result just reported carries ``iterated: {step_id, round, max,
until, reason}``, the round done: nothing failed, so it is not a rejection), ``await_gate`` (only gate
decisions can move the run), ``schema_failed`` / ``ensure_failed`` (the attempt just reported
was rejected and a retry is issued: ``failure``, ``violations`` (never empty: each says what was
wrong) and ``retries_remaining``, plus the retry's dispatch; ``schema_failed`` when the report's
shape was wrong, ``ensure_failed`` for anything else: see :data:`SHAPE_KINDS`), ``complete``,
``error`` (with ``error_type``), ``killed`` and ``cancelled``; ``evaluating`` when the run's only
work in progress is evaluate steps' commands (listed in ``evaluating``, as in any running
response that has some).
"""

from __future__ import annotations

from typing import Any

from ..dsl.values import UNDEFINED
from .evaluate import call_entry
from .gates import revise_blocked, round_limit
from .live import LiveRun
from .model import (
    READY,
    RUN_CANCELLED,
    RUN_COMPLETE,
    RUN_KILLED,
    RUN_RUNNING,
    TERMINAL,
    WAITING_GATE,
    StepState,
)


def response(run: LiveRun, *, everything: bool = False) -> dict[str, Any]:
    """The response to the call that just ran (``everything``: describe all outstanding work)."""
    header = run.header
    base: dict[str, Any] = {"run_id": header.id, "flow": header.flow}
    if header.status == RUN_COMPLETE:
        return {"status": "complete", **base, "output": header.output, "trace": trace(run),
                "total_duration_ms": _duration_ms(run), "spent": dict(header.spent)}
    if header.status == RUN_CANCELLED:
        return {"status": "cancelled", **base, "spent": dict(header.spent)}
    if header.status == RUN_KILLED:
        failure = header.failure or {}
        return {"status": "killed", **base, "step_id": failure.get("step"), "reason": failure.get("reason"),
                "rationale": failure.get("rationale"), "spent": dict(header.spent)}
    if header.status != RUN_RUNNING:
        out = error_response(run)
        _add_failed_steps(run, out)
        return out
    issued = run.issued
    if everything:  # in ready-list order however the run got here (issued live or reloaded)
        new = sorted(run.outstanding, key=run.order_key)
    elif not issued:
        new = []
    elif len(issued) == 1:  # the usual transition: one dispatch, nothing to order
        new = issued if run.steps[issued[0]].status == READY else []
    else:
        new = sorted({k: None for k in issued if run.steps[k].status == READY}, key=run.order_key)
    out = _running(run, base, new)
    if run.evaluating:
        _add_evaluations(run, out)
    _add_failure(run, out)
    return out


def _running(run: LiveRun, base: dict[str, Any], new: list[str]) -> dict[str, Any]:
    waiting = run.waiting
    gates = [gate_entry(run, k) for k in (sorted(waiting, key=run.order_key) if len(waiting) > 1 else waiting)]
    if new:
        primary = dispatch_entry(run, new[0])
        ready = [primary, *(dispatch_entry(run, k) for k in new[1:])]
        out = {"status": "execute_step", **base, **primary, "ready": ready, "outstanding": len(run.outstanding)}
    elif run.outstanding:
        first = next(iter(run.outstanding))
        out = {"status": "execute_step", **base, **_standing_entry(run, first), "ready": [],
               "outstanding": len(run.outstanding)}
        _own_lists(out)
    elif gates:
        out = {"status": "await_gate", **base, **gates[0]}
    else:  # only evaluate commands are running
        out = {"status": "evaluating", **base}
    out["gates"] = gates
    return out


def _add_evaluations(run: LiveRun, out: dict[str, Any]) -> None:
    """List the evaluate steps whose commands run (``evaluating``: step, command, since when, its
    timeout) and
    the commands this call started (``evaluate``: what runs them needs, for the caller that
    runs them: see :mod:`lockgate.engine.evaluate`)."""
    calls = {key: call_entry(run, key) for key in run.evaluating}
    out["evaluating"] = [{k: call[k] for k in ("step_id", "command", "started_at", "timeout_ms")}
                         for call in calls.values()]
    started = [calls[key] for key in dict.fromkeys(run.issued) if key in calls]
    if started:
        out["evaluate"] = started


#: The failure kinds of a report whose shape was wrong, whose retry is ``schema_failed``: its
#: result breaks the step's contract or cannot be stored (``schema``), the flow output's
#: contract (``output``), or its usage is not the budget keys with amounts the engine takes
#: (``usage``, ``dispatches`` included). Every other rejected attempt is retried as
#: ``ensure_failed``: an ensure that does not hold, or the agent reporting it could not do the
#: task (``reported``); ``failure.kind`` says which.
SHAPE_KINDS = frozenset({"schema", "output", "usage"})


def _add_failure(run: LiveRun, out: dict[str, Any]) -> None:
    """Mark a response whose call just failed an attempt (retried, or routed to on_fail): the
    last failure in ``failed_step``/``failure``, and every step whose attempt failed with its
    reason in ``failed_steps`` when there were several (a failure that ended a subflow)."""
    if not run.failed_now:
        return
    key, failure, retried = run.failed_now[-1]
    if retried and failure.get("kind") == "iterate":
        _add_round(run, out, key, failure)
        return
    if retried and run.steps[key].status == READY:
        out["status"] = "schema_failed" if failure.get("kind") in SHAPE_KINDS else "ensure_failed"
        out.update(dispatch_entry(run, key))
    out["failed_step"] = key
    out["violations"] = failure.get("violations", [])
    out["failure"] = failure
    _add_failed_steps(run, out)


def _add_round(run: LiveRun, out: dict[str, Any], key: str, failure: dict[str, Any]) -> None:
    """Mark a response whose call ended a round of ``key``'s ``iterate`` without its ``until``
    holding (semantics §6.4 step 8: the step is dispatched again, a new attempt): ``iterated``
    says which round of how many was done and why it goes round again, and the response is the
    next round's dispatch (status ``execute_step``). Not a failure: no ``failed_step``."""
    until = next((v.get("until") for v in failure.get("violations") or () if v.get("until")), None)
    reason = str(failure.get("reason") or "")
    said = f'iterate until "{until}" failed: '
    out["iterated"] = {"step_id": key, "round": failure.get("iteration"), "max": failure.get("max"), "until": until,
                       "reason": reason.removeprefix(said)}
    if run.steps[key].status == READY:
        out.update(dispatch_entry(run, key))


def _add_failed_steps(run: LiveRun, out: dict[str, Any]) -> None:
    """``failed_steps``: every step whose attempt this call failed, with the reason, when there
    were several (a subflow child, then its run step: the response names the last), or the one
    is not the step the response names (it was routed to its on_fail step, and the run then
    ended for another reason)."""
    failed = run.failed_now
    if len(failed) > 1 or (failed and failed[0][0] != out.get("step_id")):
        out["failed_steps"] = {k: f.get("reason") for k, f, _ in run.failed_now}
    if run.routed_now:
        source, target, _ = run.routed_now[-1]
        out["routed_from"] = source
        out["routed_to"] = target


def error_response(run: LiveRun) -> dict[str, Any]:
    failure = run.header.failure or {}
    out = {"status": "error", "run_id": run.header.id, "flow": run.header.flow,
           "error_type": run.header.error_type or failure.get("error_type") or "failed",
           "message": failure.get("reason", ""), "step_id": failure.get("step"),
           "spent": dict(run.header.spent)}
    if failure.get("violations"):
        out["violations"] = failure["violations"]
    return out


def dispatch_entry(run: LiveRun, key: str) -> dict[str, Any]:
    """Everything an executor needs for one issued task or fanout item stage."""
    st = run.steps[key]
    loc = run.locate(key)
    cstep, scope = loc.cstep, loc.scope
    item = loc.index is not None
    static = _static_parts(run, loc, st.stage if item else None)
    attempt = (st.stage_attempts if item else len(st.attempts)) + 1
    entry = static.template.copy()  # every key in protocol order; the issuance's values follow
    entry["step_id"] = key
    entry["task"] = st.task
    entry["inputs"] = st.inputs or {}
    _own_lists(entry)
    entry["attempt"] = attempt
    entry["retries_remaining"] = max(static.limit - attempt, 0)
    entry["token"] = st.token
    if item:
        assert st.fan is None
        entry["item_index"] = loc.index
        entry["item_count"] = (run.steps[cstep.id].fan or {}).get("count")
        entry["item"] = st.item
        entry["prev"] = None if st.prev is UNDEFINED else st.prev
        entry["cwd"] = st.worktree or run.header.workspace
    elif static.iterate:
        entry["iteration"] = st.iterations + 1
    held = st.held_for(st.token)
    if held is not None:
        entry["reported"] = {k: v for k, v in held.items() if k != "token"}
    if st.failure is not None:
        entry["previous_failure"] = st.failure
    elif st.routed is not None and st.routed.get("failure") is not None:
        entry["previous_failure"] = st.routed["failure"]
    revision = st.revision
    if revision is None and (item or scope.parent is not None):
        # a fanout item or subflow child is new work of a step the revise reset
        revision = run.steps[cstep.id if item else scope.parent].revision  # type: ignore[index]
    if revision is not None:
        entry["revision"] = revision
    if scope.parent is not None:
        entry["subflow"] = {"parent": scope.parent, "flow": scope.flow.name}
    return entry


def _own_lists(entry: dict[str, Any]) -> None:
    """Give a response its own copies of the spec-fixed containers it shares with the cache."""
    entry["ensure"] = list(entry["ensure"])
    fields = entry["output_fields"]
    if fields is not None:
        entry["output_fields"] = dict(fields)


def _standing_entry(run: LiveRun, key: str) -> dict[str, Any]:
    """The dispatch of an issuance still outstanding, which a call that issued nothing answers
    with (a fanout result answers with the same first item until that one is reported). An
    issuance is fixed by its token, so its entry is built once; callers get copies of it."""
    st = run.steps[key]
    cached = run.standing
    if cached is None or cached[0] is not st or cached[1] != st.token:
        cached = run.standing = (st, st.token, dispatch_entry(run, key))
    return cached[2]


class _Static:
    """What a dispatch entry of one step or fanout stage takes from the spec: ``template`` has
    every key of the entry in order (the spec's values set, the issuance's left None), so a
    dispatch copies it and fills in the rest."""

    __slots__ = ("iterate", "limit", "template")

    def __init__(self, template: dict[str, Any], limit: int, iterate: bool) -> None:
        self.template, self.limit, self.iterate = template, limit, iterate


def _static_parts(run: LiveRun, loc: Any, stage_index: int | None) -> _Static:
    """Built once per compiled spec, step and stage: a dispatch then only adds what changes."""
    cstep = loc.cstep
    cache = run.cspec.entry_parts
    key = (cstep.flow, cstep.id, stage_index)
    found = cache.get(key)
    if found is not None:
        return found
    if stage_index is not None:
        stage = cstep.stages[stage_index]
        out_name, ensures, agent = stage.out, stage.ensures, stage.agent
        limit = stage.attempts or cstep.step.attempts or 2
    else:
        out_name, ensures, agent = cstep.step.out, cstep.ensures, cstep.agent
        limit = cstep.max_attempts
    cspec = run.cspec
    template: dict[str, Any] = {
        "step_id": None, "kind": "fanout_item" if stage_index is not None else "do",
        "step_number": cstep.index + 1, "total_steps": loc.scope.flow.total, "task": None, "inputs": None,
        "agent": agent, "output_contract": out_name, "output_schema": cspec.schema(out_name),
        "output_fields": cspec.fields(out_name),
        "ensure": [e.source if e.kind != "judged" else f"judged: {e.statement}" for e in ensures],
        "attempt": None, "retries_remaining": None, "token": None,
    }
    iterate = cstep.step.iterate
    if stage_index is not None:
        fan = cstep.step.fanout
        template.update({"fanout": cstep.id, "item_index": None, "item_count": None, "stage": stage_index,
                         "stage_count": len(cstep.stages), "is_final_stage": stage_index == len(cstep.stages) - 1,
                         "dispatch": fan.dispatch, "isolation": fan.isolation or "none", "item": None,
                         "prev": None, "cwd": None})
    elif iterate is not None:
        template.update({"iteration": None, "iterate_max": iterate.max})
    found = cache[key] = _Static(template, limit, stage_index is None and iterate is not None)
    return found


def gate_entry(run: LiveRun, key: str) -> dict[str, Any]:
    st = run.steps[key]
    loc = run.locate(key)
    gate = loc.cstep.step.gate
    assert gate is not None
    rounds = run.header.rounds if loc.scope.parent is None else run.steps[loc.scope.parent].rounds
    entry = {
        "step_id": key,
        "kind": "gate",
        "step_number": loc.cstep.index + 1,
        "total_steps": loc.scope.flow.total,
        "token": st.token,
        "gate_token": st.token,
        "routes": gate.routes(),
        "round": rounds,
        "max_rounds": loc.scope.flow.flow.max_rounds,
        "gate_max_rounds": gate.max_rounds,
        "revisions": st.iterations,
        **_round_limit(run, loc, st),
    }
    held = st.held_for(st.token)
    if held is not None:
        entry["decided"] = held["decision"]
    blocked = revise_blocked(run, loc, st)
    if blocked is None:
        return {**entry, "decisions": ["approve", "revise", "kill"]}
    # not offered: past a round limit a revise is still taken and fails the run (semantics §6.7); a
    # gate with no on_revise target refuses it (revise_unavailable), changing nothing
    why = blocked if gate.on_revise is None else f"revise would fail the run: {blocked}"
    return {**entry, "decisions": ["approve", "kill"], "revise_unavailable": why}


def _round_limit(run: LiveRun, loc: Any, st: StepState) -> dict[str, Any]:
    """``round_limit`` ``{used, max, set_by: "gate" | "flow"}``, the limit a revise of this gate
    meets first (:func:`lockgate.engine.gates.round_limit`), and ``rounds_left``, the revises left
    before one fails the run; nothing for a gate that cannot send work back."""
    limit = round_limit(run, loc, st)
    if limit is None:
        return {}
    return {"round_limit": {"used": limit.used, "max": limit.max, "set_by": limit.set_by},
            "rounds_left": limit.left}


def trace(run: LiveRun) -> list[dict[str, Any]]:
    """One entry per step (root steps, subflow children, fanout items) in protocol order."""
    keys = sorted((k for k, st in run.steps.items() if not st.dropped), key=_trace_key(run))
    return [trace_entry(run, run.steps[k]) for k in keys]


def trace_entry(run: LiveRun, st: StepState) -> dict[str, Any]:
    """``st`` in the trace: its status, attempts, output or failure and spend in the current
    round; after a gate's revise, the ``round`` that reset it and what it did in each round
    before (``earlier_rounds``, the last :data:`~lockgate.engine.rounds.KEPT_ROUNDS` of them, with
    ``earlier_rounds_left_out`` counting those before)."""
    loc = run.locate(st.key)
    entry: dict[str, Any] = {"step_id": st.key, "kind": "fanout_item" if loc.index is not None else loc.cstep.kind,
                             "status": st.status, "attempts": len(st.attempts), "epoch": st.epoch}
    if st.started_at and st.finished_at and st.status in TERMINAL:
        entry["duration_ms"] = round((st.finished_at - st.started_at) * 1000, 3)
    if st.output is not UNDEFINED:
        entry["output"] = st.output
    if st.failure is not None:
        entry["failure"] = st.failure
    if st.iterations:
        entry["iterations"] = st.iterations
    if st.decisions:
        entry["decisions"] = st.decisions
    if st.spent:
        entry["spent"] = st.spent
    if st.status == WAITING_GATE or st.status == READY:
        entry["token"] = st.token
    if st.revision is not None:
        entry["round"] = st.revision.get("round")
    if st.history:
        entry["earlier_rounds"] = st.history
    if st.history_left_out:
        entry["earlier_rounds_left_out"] = st.history_left_out
    return entry


def _trace_key(run: LiveRun) -> Any:
    def key(k: str) -> tuple[int, ...]:
        loc = run.locate(k)
        if loc.index is not None:
            return (loc.cstep.index, 1, loc.index)
        if loc.scope.parent is not None:
            return (run.root.flow.steps[loc.scope.parent].index, 2, loc.cstep.index)
        return (loc.cstep.index, 0, 0)

    return key


def _duration_ms(run: LiveRun) -> float:
    end = run.header.finished_at or run.header.updated_at
    return round(max(end - run.header.created_at, 0) * 1000, 3)
