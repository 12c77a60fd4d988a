"""``step_done`` settlement: fencing, usage, reported failure, contract, ensures, iterate.

Refusals (unknown step, nothing awaited, missing/stale/duplicate token) raise before anything
changes. An accepted result always becomes exactly one attempt record.
"""

from __future__ import annotations

from typing import Any

from ..dsl.expr.equality import json_equal
from ..dsl.values import UNDEFINED
from ..errors import EngineError, StaleToken
from . import budget, fanout
from .advance import (
    check_result,
    fail_attempt,
    fail_parent,
    output_source_failure,
    record_judged,
    succeed,
)
from .ensures import until_holds
from .live import LiveRun, Located
from .model import (
    FAILED,
    PENDING,
    READY,
    RUN_CANCELLED,
    RUN_RUNNING,
    WAITING_GATE,
    StepState,
    now,
)
from .textargs import oversize_result, reported_failure


def check_issuance(run: LiveRun, key: str, token: Any, *, gate: bool) -> StepState:
    """The record awaiting a result (or decision) under ``token``; raise, changing nothing, if not.

    In the order of semantics §6.4: a cancelled run, an unknown step, then whether the step
    awaits anything (a duplicate of an accepted report is named as such first), then the token.
    A fanout item or subflow child withdrawn when its step was reset or started again (a
    tombstone) is no unknown step: its token is stale (§6.12), whatever it held.
    """
    refuse_cancelled(run)
    st = run.steps.get(key)
    if st is None or key.startswith("@"):
        raise EngineError(f"run {run.header.id} has no step {key!r}", error_type="unknown_step",
                          run_id=run.header.id, step_id=key)
    present = isinstance(token, str) and bool(token)
    refuse_duplicate(run, st, token, f"step {key} already accepted the {'decision' if gate else 'result'}")
    refuse_finished(run)
    if st.dropped:
        _refuse_withdrawn(run, key, present, gate)
    wanted = WAITING_GATE if gate else READY
    if st.status != wanted:
        what = "a gate decision" if gate else "a result"
        raise EngineError(f"step {key} is {st.status}, not awaiting {what}", error_type="not_awaiting",
                          run_id=run.header.id, step_id=key, step_status=st.status)
    if not present:
        raise StaleToken(f"missing {'gate' if gate else 'dispatch'} token for step {key}",
                         run_id=run.header.id, step_id=key, reason="missing")
    if st.token != token:
        raise StaleToken(f"token is not the current issuance of step {key} (stale or foreign); nothing changed",
                         run_id=run.header.id, step_id=key, reason="stale")
    return st


def _refuse_withdrawn(run: LiveRun, key: str, present: bool, gate: bool) -> None:
    """StaleToken for an answer to a withdrawn issuance (``missing`` without a token)."""
    if not present:
        raise StaleToken(f"missing {'gate' if gate else 'dispatch'} token for step {key}",
                         run_id=run.header.id, step_id=key, reason="missing")
    owner = key.rpartition("/")[0]
    raise StaleToken(f"token is stale: step {key} was withdrawn when {owner} was reset or started again; "
                     "nothing changed", run_id=run.header.id, step_id=key, reason="stale")


def check_report(run: LiveRun, key: str, token: Any, result: Any, failure: Any) -> StepState:
    """:func:`check_issuance` for a reported ``result`` (or ``failure``): a report under a token
    that already accepted a different result is refused as such (reason ``differs``), not as
    a duplicate of it."""
    try:
        return check_issuance(run, key, token, gate=False)
    except StaleToken as exc:
        raise _reported_otherwise(run, key, result, failure, exc) from None


def _reported_otherwise(run: LiveRun, key: str, result: Any, failure: Any, exc: StaleToken) -> StaleToken:
    """``exc``, unless it calls a report a duplicate of an accepted result it differs from: that
    report lost to the one accepted first (another session or server answered the same dispatch)
    and must say so rather than read as done, as a gate decision does (``_decided_otherwise`` in
    :mod:`lockgate.engine.gates`). Compared only here, on the refusal path."""
    if exc.detail.get("reason") != "duplicate":
        return exc
    accepted = _accepted_result(run.steps[key])
    if accepted is UNDEFINED or (failure is None and json_equal(accepted, result)):
        return exc  # a repeat of the accepted report, or one whose result was not kept (a late spend)
    yours = "result" if failure is None else "failure report"
    return StaleToken(f"a different result was accepted first for step {key} under this token; your {yours} was "
                      "not applied and nothing changed", run_id=run.header.id, step_id=key, reason="differs")


def _accepted_result(st: StepState) -> Any:
    """The result ``st`` accepted under its ``accepted`` token: a step's output, a fanout item's
    last successful stage result (the attempts after it, if any, failed); UNDEFINED if none."""
    if st.index is None:
        return st.output
    return next((a.get("result", UNDEFINED) for a in reversed(st.attempts) if "failure" not in a), UNDEFINED)


def refuse_cancelled(run: LiveRun) -> None:
    """EngineError ``run_cancelled`` when the run is cancelled (or a cancel was asked)."""
    if run.header.status == RUN_CANCELLED or run.header.cancel_requested:
        raise EngineError(f"run {run.header.id} is cancelled", error_type="run_cancelled", run_id=run.header.id)


def refuse_duplicate(run: LiveRun, st: StepState, token: Any, accepted: str) -> None:
    """StaleToken ``duplicate`` when ``st`` already accepted an answer under ``token``;
    ``accepted`` says so in words ("step S already accepted the result")."""
    if isinstance(token, str) and token and st.accepted == token:
        raise StaleToken(f"{accepted} for this token (duplicate); nothing changed", run_id=run.header.id,
                         step_id=st.key, reason="duplicate")


def refuse_finished(run: LiveRun) -> None:
    """EngineError ``run_finished`` when the run no longer runs."""
    if run.header.status != RUN_RUNNING:
        raise EngineError(f"run {run.header.id} is {run.header.status}; it takes no more results",
                          error_type="run_finished", run_id=run.header.id, status=run.header.status)


def step_done(run: LiveRun, key: str, result: Any, token: Any, failure: Any = None,
              usage: dict[str, Any] | None = None, rejected: dict[str, Any] | None = None) -> None:
    """Settle a reported result (or ``failure``). ``rejected`` is the engine's own failure of the
    report, decided before reading it (see :func:`unstorable`): the attempt fails with it, as it
    does when the result is too large to keep (:func:`~lockgate.engine.textargs.oversize_result`),
    which is then neither checked nor kept, or the agent reported a failure
    (:func:`reported_attempt`). A failure's text is kept cut to its limit. The usage settles
    first, whatever the outcome (semantics §6.4 steps 2-4)."""
    st = check_report(run, key, token, result, failure)
    if rejected is None:
        rejected = oversize_result(result) if failure is None else reported_attempt(reported_failure(failure))
    if st.parked is not None:
        st.parked = None
        run.touch(st)
    loc = run.locate(key)
    if loc.index is not None:
        fanout.item_result(run, loc, st, result, usage, rejected)
        return
    if usage is not None and not _settle_usage(run, loc, st, usage):
        return
    if rejected is not None:
        fail_attempt(run, loc, st, rejected, usage=usage)
        return
    scope, cstep = loc.scope, loc.cstep
    inputs = run.scope_input(scope)
    judged: list[dict[str, Any]] = []
    verdict = check_result(run, scope, cstep.step.out, cstep.ensures, result, {"input": inputs}, judged=judged,
                           subject=(key, run.header.workspace, not run.irreversible))
    if judged:
        spend = record_judged(run, key, judged)
        if spend and not _settle_usage(run, loc, st, spend, usage or {}):  # the judges' spend counts as the step's
            return
    if verdict is not None:
        fail_attempt(run, loc, st, verdict, output=result, usage=usage)
        return
    if cstep.until is not None and not _iterate(run, loc, st, result, usage):
        return
    verdict = output_source_failure(run, scope, cstep, result)
    if verdict is not None:
        fail_attempt(run, loc, st, verdict, output=result, usage=usage)
        return
    record: dict[str, Any] = {"attempt": len(st.attempts) + 1, "at": now(), "result": result}
    if usage:
        record["usage"] = usage
    st.attempts.append(record)
    succeed(run, loc, st, result)


def reported_attempt(failure: Any) -> dict[str, Any]:
    """The failure of an attempt the agent reported it could not do (``failure``: its text as
    kept, see :func:`~lockgate.engine.textargs.reported_failure`). Its violation says so, as
    every failed attempt's does, so that what reads a retry's ``violations`` learns why; it
    holds the message alone, without a Python agent's frames, which views show apart."""
    reason = f"agent reported failure: {failure}"
    message = reason
    if "\n" in message:  # perhaps a Python agent's traceback (the agents package is loaded then)
        from .agents.python import split_traceback

        message = split_traceback(message)[0]
    return {"kind": "reported", "reason": reason, "violations": [{"message": message}]}


def parked(token: Any, result: Any, failure: Any, usage: Any) -> dict[str, Any]:
    """The record of a reported result held while a judge is asked (see :func:`park`); a
    reported failure is held without the result (``step_done`` reads none beside it)."""
    record: dict[str, Any] = {"token": token}
    if failure is not None:
        record["failure"] = reported_failure(failure)
    else:
        record["result"] = result
    if usage:
        record["usage"] = usage
    return record


def park(run: LiveRun, key: str, record: dict[str, Any], *, gate: bool = False) -> None:
    """Hold a reported result (or, ``gate``, a gate decision: :func:`parked_decision`) on its
    step (fenced like the report itself), in a transaction of its own before the one that
    checks it: when that one asks a judge, which may take long, a crash meanwhile loses nothing
    reported, and the dispatch is described with the result to report again (``reported``)
    instead of work to do again (a gate with the decision to apply again: ``decided``)."""
    if gate:
        st = check_issuance(run, key, record["token"], gate=True)
    else:
        st = check_report(run, key, record["token"], record.get("result"), record.get("failure"))
    if gate and st.held_for(record["token"]) is not None:
        return  # a decision for this round is held already: the first one stands (see gates)
    if "result" in record and oversize_result(record["result"]) is not None:
        return  # not kept: its own transaction fails the attempt at once, asking no judge
    st.parked = record
    run.touch(st)


def parked_decision(token: Any, outcome: str, rationale: Any, resolved_by: Any,
                    via: str | None = None) -> dict[str, Any]:
    """The record of a gate decision held while its transition asks a judge (see :func:`park`),
    with the surface it came through (``via``), when known, for its audit event (beside the
    decision, which responses show as the gate's ``decided``)."""
    return {"token": token, "decision": {"outcome": outcome, "rationale": str(rationale or ""),
                                         "resolved_by": str(resolved_by or "human")},
            **({"via": via} if via is not None else {})}


def unpark(run: LiveRun, key: str, record: dict[str, Any]) -> None:
    """Let go of ``record`` held on ``key`` (a decision its own transaction refused, changing
    nothing: the gate waits as before); nothing when another is held there now."""
    st = run.steps.get(key)
    if st is not None and st.parked == record:
        st.parked = None
        run.touch(st)


def unstorable(problem: str, result: Any = None) -> dict[str, Any]:
    """The failure of an attempt whose report no store can keep (a NaN, a set, U+0000, text
    that is not Unicode, nesting too deep): the agent's answer is wrong, so it is retried like
    any schema failure rather than failing the caller. Where ``result`` itself is not JSON, the
    violations say where, as a contract check does, and so they do where its text is what no
    store keeps (U+0000, a lone surrogate): the store's ``problem`` names its own record, which
    the agent never saw, so it is said only when neither finds anything."""
    from ..dsl.contractcheck import json_violations, text_violations

    found = json_violations(result, limit=10) or text_violations(result, limit=10)
    violations = [{"path": v.path, "message": v.message} for v in found] or [{"path": "result", "message": problem}]
    reason = "the result cannot be stored: " + ("; ".join(map(str, found)) if found else problem)
    return {"kind": "schema", "reason": reason, "violations": violations}


def late_spend(run: LiveRun, key: str, token: Any, usage: Any) -> None:
    """Record the spend reported with the result of an issuance the run ended before it came
    back (a flow budget ran out, a step failed the run): the work ran, so what it spent is
    settled in every ledger, even over the limit (semantics §6.10), and its token is burned so
    the result cannot count twice. Nothing else changes. Raises EngineError (``nothing_to_record``)
    when the token is not that issuance's or there is no valid spend."""
    st = run.steps.get(key)
    spend = {}
    if (run.header.status not in (RUN_RUNNING, RUN_CANCELLED) and st is not None and not st.dropped
            and st.status == READY and isinstance(token, str) and st.token == token
            and budget.usage_problem(usage) is None and usage):
        spend = {k: v for k, v in budget.reported_spend(usage).items() if v}
    if not spend:
        raise EngineError(f"nothing to record for step {key}", error_type="nothing_to_record",
                          run_id=run.header.id, step_id=key)
    loc = run.locate(key)
    owner = run.steps[loc.cstep.id] if loc.index is not None else st
    budget.charge(run, key, budget.ledgers(run, loc.scope, owner, loc.cstep.budget), spend)
    st.accepted, st.token = token, None
    run.touch(st)
    run.touch(owner)


def _iterate(run: LiveRun, loc: Located, st: StepState, result: Any, usage: Any) -> bool:
    """True when ``until`` holds; otherwise record the cycle (re-dispatch or exhaust), False."""
    cstep = loc.cstep
    assert cstep.until is not None
    holds, reason = until_holds(cstep.until, {"result": result, "input": run.scope_input(loc.scope)},
                                run.workspace())
    if holds:
        return True
    st.iterations += 1
    limit = cstep.step.iterate.max if cstep.step.iterate and cstep.step.iterate.max else 1
    why = f'iterate until "{cstep.until.source}" failed: {reason}'
    failure = {"kind": "iterate", "reason": why, "violations": [{"until": cstep.until.source, "reason": why}],
               "iteration": st.iterations, "max": limit}
    last = st.attempts[-1] if st.attempts else None
    identical = last is not None and "result" in last and json_equal(last["result"], result)
    if st.iterations >= limit or identical:
        if st.iterations >= limit:
            failure["reason"] = f"{why} (iterate max {limit} reached)"
        fail_attempt(run, loc, st, failure, output=result, forced=True, usage=usage)
        return False
    n = len(st.attempts) + 1
    record: dict[str, Any] = {"attempt": n, "at": now(), "result": result, "failure": {"attempt": n, **failure}}
    if usage:
        record["usage"] = usage
    st.attempts.append(record)
    st.failure = record["failure"]
    st.token = None
    run.event("result", st.key, attempt=n, result=result, iterate={"iteration": st.iterations, "max": limit})
    run.failed_now.append((st.key, record["failure"], True))
    run.set_status(st, PENDING)
    run.work.appendleft(st.key)
    return False


def _settle_usage(run: LiveRun, loc: Located, st: StepState, usage: Any, reported: Any = None) -> bool:
    """Settle ``usage`` into the ledgers; False when that already decided the attempt. An
    attempt record keeps the step's own ``reported`` usage (default: ``usage`` itself)."""
    reported = usage if reported is None else reported
    if usage is None:
        return True
    invalid = budget.invalid_usage(usage)
    if invalid is not None:
        fail_attempt(run, loc, st, invalid)
        return False
    spend = budget.reported_spend(usage)
    task = st if loc.index is None else run.steps[loc.cstep.id]
    over = budget.charge(run, st.key, budget.ledgers(run, loc.scope, task, loc.cstep.budget), spend) if spend else None
    if over is not None:
        reason = budget.exhausted(over)
        if over.level != "task":  # the step that overspent fails; its scope ends
            st.failure = {"kind": "budget", "reason": reason}
            st.attempts.append({"attempt": len(st.attempts) + 1, "at": now(), "failure": st.failure})
            st.token = None
            run.set_status(st, FAILED)
        if over.level == "flow":
            run.fail_run("budget_exhausted", reason, st.key, spent=dict(run.header.spent),
                         budget=dict(run.root.flow.budget))
        elif over.level == "subflow":
            fail_parent(run, loc.scope, {"kind": "budget", "reason": reason, "violations": []})
        else:
            fail_attempt(run, loc, st, {"kind": "budget", "reason": reason, "violations": []}, usage=reported)
        return False
    dispatched = budget.reported_dispatches(usage)
    if dispatched is not None:
        fail_attempt(run, loc, st, dispatched, usage=usage)
        return False
    return True
