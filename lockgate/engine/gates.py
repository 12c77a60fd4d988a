"""Gate decisions: approve, revise (with rounds and the reset of the descendant region), kill.

Approve with a null ``on_approve`` completes the gate (the source document's reading: "approve
routes to on_approve, or completes the gate when the route is null"): its dependents proceed and
the flow completes when its steps are done. Inside a subflow it completes the subflow at once
(semantics §6.7, "inside a subflow the subflow completes instead"): the run step's output is the
subflow's ``output`` as it stands then, checked as at any completion (unavailable or invalid, the
run step fails), and the child steps not yet done are left undone. Kill with a null ``on_kill``
ends the run ``killed`` (inside a subflow it fails the run step).

``reject`` is accepted as the CLI's word for ``kill``. Every refusal (bad decision, stale token,
gate not waiting, a revise of a gate with no ``on_revise`` target: ``revise_unavailable``)
changes nothing and leaves the gate waiting with its token; a revise whose rounds are exhausted
consumes the token and fails the scope (semantics §6.7).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..dsl.values import UNDEFINED
from ..errors import EngineError, StaleToken
from .advance import fail_parent, notify
from .carry import fate
from .live import LiveRun, Located, Scope
from .model import FAILED, RUN_KILLED, RUNNING, SUCCEEDED, now
from .results import check_issuance
from .rounds import remember_round, round_summary
from .subflows import settle_subflow
from .textargs import decision_text

DECISIONS = {"approve": "approve", "revise": "revise", "kill": "kill", "reject": "kill"}


def gate_resolve(run: LiveRun, key: str, outcome: Any, rationale: Any, resolved_by: Any, token: Any,
                 via: str | None = None) -> None:
    """Apply a decision on the waiting gate ``key``. ``via``: the surface it came through
    (``"mcp"``, ``"cli"``, ``"notebook"``; None for the Python API), recorded in the audit's
    ``gate_resolved`` event as ``decided_via``, since ``resolved_by`` is whatever the caller
    says (an agent may call itself "human")."""
    decision = DECISIONS.get(outcome) if isinstance(outcome, str) else None
    if decision is None:
        raise EngineError(f"invalid gate decision {outcome!r}; expected approve, revise or kill (reject)",
                          error_type="invalid_decision", run_id=run.header.id, step_id=key)
    try:
        st = check_issuance(run, key, token, gate=True)
    except StaleToken as exc:
        raise _decided_otherwise(run, key, decision, exc) from None
    rationale, resolved_by, via = _held(run, st, key, decision, token) or (rationale, resolved_by, via)
    loc = run.locate(key)
    gate = loc.cstep.step.gate
    assert gate is not None
    rationale, resolved_by = decision_text(rationale, resolved_by)
    entry = {"decision": decision, "rationale": rationale, "resolved_by": resolved_by,
             "at": now(), "round": _rounds(run, loc.scope)}
    if decision == "revise":
        _refuse_targetless(run, loc, key)
        _revise(run, loc, st, entry, via)
        return
    st.decisions = [*(st.decisions or []), entry]
    st.accepted = st.token
    st.token = None
    target = gate.on_approve if decision == "approve" else gate.on_kill
    if decision == "kill" and target is None:
        run.set_status(st, FAILED)
        _event(run, st.key, entry, None, via)
        reason = f"gate {loc.cstep.id} killed flow"
        if loc.scope.parent is not None:
            fail_parent(run, loc.scope, {"kind": "killed", "reason": reason, "violations": []})
        else:
            run.fail_run("killed", reason, st.key, status=RUN_KILLED, rationale=entry["rationale"],
                         resolved_by=entry["resolved_by"])
        return
    run.set_status(st, SUCCEEDED)
    _event(run, st.key, entry, target, via)
    if target is None and decision == "approve" and loc.scope.parent is not None:
        _end_subflow(run, loc)
        return
    if target is not None:
        tst = run.steps[loc.scope.prefix + target]
        tst.routed = {"from": loc.cstep.id, "decision": decision}
        run.touch(tst)
        run.work.append(tst.key)
    notify(run, loc, st)


def _end_subflow(run: LiveRun, loc: Located) -> None:
    """A null ``on_approve`` inside a subflow completes the subflow at once (semantics §6.7; at
    the root it only completes the gate, see the module's docstring). When the subflow's output
    step has not produced its output by then, the run step fails saying that this approve ended
    the subflow first, and what became of that step (the bare "output is unavailable" left the
    reader to guess why the same flow completes when it is the entry flow)."""
    scope = loc.scope
    ref = scope.flow.output_ref
    if ref is not None and run.output_of(scope, ref.name or "") is UNDEFINED:
        why = fate(run, scope, ref)
        fail_parent(run, scope, {"kind": "subflow", "violations": [], "reason": (
            f"approving gate {loc.cstep.id} (on_approve: null) ended subflow {scope.flow.name} before its output "
            f"{ref.raw} was produced{f' ({why})' if why else ''}")})
        return
    settle_subflow(run, scope, early=True)


class RoundLimit(NamedTuple):
    """The revision limit a revise of a gate meets first: ``used`` of ``max`` rounds, set by the
    ``"flow"`` (its ``max_rounds`` counts the scope's rounds) or the ``"gate"`` (its own
    ``max_rounds`` counts its revisions)."""

    used: int
    max: int
    set_by: str

    @property
    def left(self) -> int:
        """The revises left before one fails the run."""
        return max(self.max - self.used, 0)


def round_limit(run: LiveRun, loc: Located, st: Any) -> RoundLimit | None:
    """The limit a revise of this waiting gate meets first (the gate's on a tie), as the engine
    enforces it; None for a gate that cannot send work back (no ``on_revise`` target or no flow
    ``max_rounds``)."""
    gate = loc.cstep.step.gate
    assert gate is not None
    flow_max = loc.scope.flow.flow.max_rounds
    if gate.on_revise is None or flow_max is None:
        return None
    rounds = _rounds(run, loc.scope)
    if gate.max_rounds is not None and gate.max_rounds - st.iterations <= flow_max - rounds:
        return RoundLimit(st.iterations, gate.max_rounds, "gate")
    return RoundLimit(rounds, flow_max, "flow")


def revise_blocked(run: LiveRun, loc: Located, st: Any) -> str | None:
    """Why a revise of this waiting gate cannot send the work back, or None when it can: a round
    limit is reached or the flow sets no ``max_rounds`` (the revise fails the run, semantics
    §6.7), or the gate has no ``on_revise`` target (the revise is refused, changing nothing).
    Views leave revise out of the decisions they offer then."""
    limit = round_limit(run, loc, st)
    if limit is not None:
        return None if limit.left else f"the {limit.set_by}'s {limit.max} revision round(s) are used up"
    gate = loc.cstep.step.gate
    assert gate is not None
    return "the gate has no on_revise target" if gate.on_revise is None else "the flow sets no max_rounds"


def _refuse_targetless(run: LiveRun, loc: Located, key: str) -> None:
    """Refuse a revise of a gate with no ``on_revise`` target (``revise_unavailable``), changing
    nothing: there is no step to send the work back to, so it is no decision the gate can
    take. Semantics §6.7 has such a revise consumed and the scope failed as "gate revision rounds
    exhausted" with no round used, which named a cause that was not the cause; the decisions
    the gate takes (approve, kill) are still open, with the same token."""
    gate = loc.cstep.step.gate
    assert gate is not None
    if gate.on_revise is None:
        raise EngineError(f"gate {key} cannot be revised: it has no on_revise target, so there is no step to send "
                          "the work back to; decide approve or kill (reject) instead. Nothing was changed: the "
                          "gate is still waiting", error_type="revise_unavailable", run_id=run.header.id,
                          step_id=key, decisions=["approve", "kill"])


def _held(run: LiveRun, st: Any, key: str, decision: str, token: Any) -> tuple[str, str, str | None] | None:
    """The decision held on the gate for this round (see Engine.gate_resolve), which is applied
    now: (its rationale, who made it, the surface it came through) when ``decision`` is the same
    outcome (the first one to decide is the one recorded); StaleToken ``decided`` when it
    differs, changing nothing."""
    held = st.held_for(token)
    made = held.get("decision") if held is not None else None
    if not isinstance(made, dict):
        return None
    if made["outcome"] != decision:
        why = f" ({made['rationale']})" if made["rationale"] else ""
        raise StaleToken(f"gate {key} was already decided for this token: {made['outcome']} by {made['resolved_by']}"
                         f"{why}, which resuming the run applies; your {decision} was not applied and nothing "
                         "changed", run_id=run.header.id, step_id=key, reason="decided", decision=made["outcome"],
                         resolved_by=made["resolved_by"])
    st.parked = None
    run.touch(st)
    return made["rationale"], made["resolved_by"], held.get("via")


def _decided_otherwise(run: LiveRun, key: str, decision: str, exc: StaleToken) -> StaleToken:
    """``exc``, unless it calls a decision a duplicate of an accepted one it differs from: that
    decision lost to the one taken first (say, a person's revise at the CLI while an agent
    approved) and must say so rather than read as done (reason ``decided``)."""
    decided = (run.steps[key].decisions or [{}])[-1]
    if exc.detail.get("reason") != "duplicate" or decided.get("decision") in (None, decision):
        return exc
    by, why = decided.get("resolved_by") or "someone", decided.get("rationale")
    return StaleToken(f"gate {key} was already decided for this token: {decided['decision']} by {by}"
                      f"{f' ({why})' if why else ''}; your {decision} was not applied and nothing changed",
                      run_id=run.header.id, step_id=key, reason="decided", decision=decided["decision"],
                      resolved_by=by)


def _revise(run: LiveRun, loc: Located, st: Any, entry: dict[str, Any], via: str | None) -> None:
    scope, cstep = loc.scope, loc.cstep
    gate = cstep.step.gate
    assert gate is not None
    total = _rounds(run, scope) + 1
    limit = scope.flow.flow.max_rounds
    if revise_blocked(run, loc, st) is not None:
        st.decisions = [*(st.decisions or []), entry]
        st.accepted = st.token
        st.token = None
        run.set_status(st, FAILED)
        _event(run, st.key, entry, None, via)
        reason = "gate revision rounds exhausted"
        if scope.parent is not None:
            fail_parent(run, scope, {"kind": "rounds", "reason": reason, "violations": []})
        else:
            run.fail_run("rounds_exhausted", reason, st.key, rounds=total - 1, max_rounds=limit,
                         gate_max_rounds=gate.max_rounds)
        return
    writes = {}
    if scope.parent is None:
        from .carry import revise_writes

        writes = revise_writes(run, cstep.id)  # raises (changing nothing) when unresolvable
    token = st.token
    _set_rounds(run, scope, total)
    if writes:
        from .carry import apply_revise_writes

        apply_revise_writes(run, cstep.id, token, total, writes)
    st.decisions = [*(st.decisions or []), entry]  # before the reset: the round it ends says how it ended
    reset = reset_region(run, scope, gate.on_revise,
                         {"gate": st.key, "note": entry["rationale"], "round": total})
    st = run.steps[st.key]
    st.accepted = token
    st.iterations += 1
    run.touch(st)
    _event(run, st.key, entry, scope.prefix + gate.on_revise, via)
    run.event("step_reset", st.key, reason="revise", reset=reset, round=total)


def reset_region(run: LiveRun, scope: Scope, target: str, revision: dict[str, Any]) -> list[dict[str, Any]]:
    """Reset the revise target's closure to pending (new epoch), dropping fanout items and
    subflow children; gates keep their revision counters. Every reset step records
    ``revision`` (the gate, its note, the round), which its next dispatches carry, and keeps
    a summary of the round it ends (:func:`~lockgate.engine.rounds.round_summary`; a fanout's or run step's
    has what its items or children did).

    A step keeps the route that activated it when the step that routed (a gate's approve or
    kill, a failure's ``on_fail``) lies outside the region: that decision is not reset and still
    holds, so the step runs again rather than being skipped as never routed (a revise means
    "redo from there"). A route taken inside the region is cleared with its router, which
    decides again."""
    region = scope.flow.reset_closure(target)
    inside = set(region)
    out = []
    for sid in region:
        st = run.steps[scope.prefix + sid]
        cstep = scope.flow.steps[sid]
        before = st.epoch
        nested = cstep.kind in ("fanout", "run")
        # summarised before its items or children are dropped, so what they did is kept
        ended = round_summary(st, run.children(st.key + "/") if nested else None,
                              "items" if cstep.kind == "fanout" else "children", ended_round=revision["round"] - 1)
        if nested:
            run.fans.pop(st.key, None)
            run.drop_records(st.key + "/")
            run.scopes.pop(st.key + "/", None)
        keep = st.iterations if cstep.kind == "gate" else 0
        decisions = st.decisions
        routed = st.routed if st.routed is not None and st.routed.get("from") not in inside else None
        run.set_status(st, "pending")
        st.reset()
        if ended is not None:
            remember_round(st, ended)
        st.iterations = keep
        st.decisions = decisions
        st.routed = routed
        st.finished_at = None
        st.revision = dict(revision)
        run.touch(st)
        run.work.append(st.key)
        out.append({"step_id": st.key, "from_epoch": before, "to_epoch": st.epoch})
    return out


def _rounds(run: LiveRun, scope: Scope) -> int:
    return run.header.rounds if scope.parent is None else run.steps[scope.parent].rounds


def _set_rounds(run: LiveRun, scope: Scope, value: int) -> None:
    if scope.parent is None:
        run.header.rounds = value
    else:
        parent = run.steps[scope.parent]
        assert parent.status == RUNNING
        parent.rounds = value
        run.touch(parent)


def _event(run: LiveRun, key: str, entry: dict[str, Any], target: str | None, via: str | None) -> None:
    """The audit's ``gate_resolved`` event; ``decided_via`` only when the surface is known (a key
    that sorts first, so the one-line ``lockgate audit`` shows it before cutting long details)."""
    run.event("gate_resolved", key, decision=entry["decision"], target=target, rationale=entry["rationale"],
              resolved_by=entry["resolved_by"], **({"decided_via": via} if via is not None else {}))
