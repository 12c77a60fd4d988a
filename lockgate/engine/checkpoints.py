"""Checkpoints: ``commit`` snapshots a run's state under a label, ``revert`` restores it.

A snapshot holds the run status, output, failure, rounds, carry and every step record; it is
stored as the engine record ``@cp/<label>``. Spend is not rolled back (the live ledger is kept,
restored step ledgers come back), tokens of restored issuances are re-minted so pre-revert
tokens are stale, and reverting a finished run brings it back to life. Both are refused on
cancelled runs and, while the run runs, when a fanout is in flight or a consumer-dispatched
worktree fanout waits for its successor gates (the consumer's worktrees and merge are fenced by
those gates). A run that ended with a fanout running keeps it as it was, like any step it left
mid-way, but nothing of it moves any more (no result is taken, no item promoted, its items'
worktrees are removed): it is not in flight, and the run can be committed and reverted
(semantics §6.14, §8.22: reverting a failed run revives it).
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import EngineError
from . import drivers, evaluate
from .advance import advance
from .live import Env, LiveRun
from .store.codec import MAX_STEP_ID
from .textargs import storable_text
from .model import (
    CHECKPOINT_PREFIX,
    Header,
    PENDING,
    READY,
    RUN_CANCELLED,
    RUN_RUNNING,
    RUNNING,
    SKIPPED,
    SUCCEEDED,
    WAITING_GATE,
    StepState,
    new_token,
)

SNAPSHOT_FIELDS = ("status", "error_type", "failure", "output", "rounds", "carry", "finished_at")


def _refuse(run: LiveRun, label: Any) -> str:
    if not isinstance(label, str) or not label.strip():
        raise EngineError("a checkpoint label must be a non-empty string", error_type="invalid_label",
                          run_id=run.header.id)
    storable_text(label.strip(), "a checkpoint label", max_bytes=MAX_STEP_ID - len(CHECKPOINT_PREFIX))
    if run.header.status == RUN_CANCELLED:
        raise EngineError(f"run {run.header.id} is cancelled", error_type="flow_cancelled", run_id=run.header.id)
    if run.header.status != RUN_RUNNING:
        return label.strip()
    if run.fans:
        raise EngineError(f"run {run.header.id} has a fanout in flight ({', '.join(run.fans)}); checkpoints wait "
                          "for it to settle", error_type="fanout_in_flight", run_id=run.header.id)
    unreleased = _unreleased_worktrees(run)
    if unreleased:
        raise EngineError(f"run {run.header.id}: the worktrees of consumer fanout {', '.join(unreleased)} are not "
                          "released; checkpoints wait for its successor gate to resolve",
                          error_type="fanout_in_flight", run_id=run.header.id)
    return label.strip()


def _unreleased_worktrees(run: LiveRun) -> list[str]:
    """Succeeded consumer-dispatched ``isolation: worktree`` fanouts with a successor gate that has
    not succeeded: the consumer's worktree lifecycle is still open (semantics §6.8, §6.14)."""
    out = []
    for key, st in run.steps.items():
        if st.status != SUCCEEDED or st.dropped or st.index is not None:  # items are not fanouts
            continue
        loc = run.locate(key)
        fan = loc.cstep.step.fanout
        if fan is None or fan.dispatch != "consumer" or fan.isolation != "worktree":
            continue
        gates = [loc.scope.prefix + c.id for c in loc.scope.flow.steps.values()
                 if c.kind == "gate" and loc.cstep.id in c.deps]
        if any(run.steps[g].status not in (SUCCEEDED, SKIPPED) for g in gates):
            out.append(key)
    return out


def commit(run: LiveRun, label: Any) -> dict[str, Any]:
    label = _refuse(run, label)
    header = run.header.to_dict()
    snapshot = copy.deepcopy({  # records share their lists and dicts with the live state
        "key": CHECKPOINT_PREFIX + label,
        "label": label,
        "header": {k: header[k] for k in SNAPSHOT_FIELDS if k in header},
        "steps": {k: st.to_dict() for k, st in run.steps.items() if not st.dropped},
    })
    run.extra_records[snapshot["key"]] = snapshot
    run.checkpoint_records[label] = snapshot
    if label not in run.header.checkpoints:
        run.header.checkpoints.append(label)
    current = next((k for k in run.root.flow.order if run.steps[k].status not in ("succeeded", "failed", "skipped")),
                   None)
    run.event("checkpoint_committed", None, label=label)
    return {
        "status": "committed", "run_id": run.header.id, "label": label,
        "step_number": (run.root.flow.order.index(current) + 1) if current else run.root.flow.total + 1,
        "current_step_id": current, "checkpoints": list(run.header.checkpoints),
    }


def revert(run: LiveRun, label: Any, env: Env) -> LiveRun:
    """A new live run holding the restored state (every record marked changed), advanced."""
    label = _refuse(run, label)
    snapshot = run.checkpoint_records.get(label)
    if snapshot is None:
        raise EngineError(f"run {run.header.id} has no checkpoint {label!r}", error_type="checkpoint_not_found",
                          run_id=run.header.id, available=list(run.header.checkpoints))
    saved = copy.deepcopy(snapshot)  # the checkpoint stays as committed, for the next revert
    header = run.header
    revived = header.status != RUN_RUNNING  # an ended run brought back: its last drive has returned
    defaults = Header(id=header.id, flow=header.flow)  # a field at its default was not written down
    for name in SNAPSHOT_FIELDS:
        setattr(header, name, saved["header"][name] if name in saved["header"] else getattr(defaults, name))
    header.cancel_requested = False
    restored = {k: StepState.from_dict(v) for k, v in saved["steps"].items()}
    for key, st in run.steps.items():
        if key not in restored:
            restored[key] = st if st.dropped else StepState(key, status="failed", dropped=True, epoch=st.epoch + 1)
    for st in restored.values():
        if st.status in (READY, WAITING_GATE):
            st.token = new_token()
    fresh = LiveRun(header, run.cspec, restored, run.version, env)
    fresh.checkpoint_records = run.checkpoint_records
    fresh.driver = run.driver  # who drives the run is not part of its state
    fresh.begin()
    if revived:
        drivers.vacate(fresh)
    fresh.sweep_worktrees()
    fresh.dirty.update(restored)
    fresh.event("checkpoint_reverted", None, label=label, steps_restored=len(snapshot["steps"]))
    fresh.work.extend(k for k, st in restored.items() if st.status == PENDING and not st.dropped)
    if header.status == RUN_RUNNING:
        for key in list(fresh.evaluating):
            evaluate.restart(fresh, key)
        for key, st in restored.items():
            if st.status == RUNNING and st.fan is not None:
                fresh.work.append(key)
        advance(fresh)
    return fresh
