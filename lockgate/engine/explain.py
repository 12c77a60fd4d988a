"""``why``: what a run is waiting on, in words, with the exact command that unblocks each wait."""

from __future__ import annotations

import shlex
from typing import Any

from .live import LiveRun
from .model import RUN_CANCELLED, RUN_COMPLETE, RUN_KILLED, RUN_RUNNING
from .evaluate import call_entry
from .responses import dispatch_entry, gate_entry


def explain(run: LiveRun) -> dict[str, Any]:
    """``{run_id, status, summary, waits: [{kind, step_id, reason, commands}]}``."""
    header = run.header
    rid = header.id
    waits: list[dict[str, Any]] = []
    if header.status == RUN_RUNNING:
        for key in run.waiting:
            gate = gate_entry(run, key)
            routes = gate["routes"]
            commands = [f"lockgate gate approve {rid} {shlex.quote(key)} --note \"...\""]
            if routes.get("revise"):
                commands.append(f"lockgate gate revise {rid} {shlex.quote(key)} --note \"...\"")
            commands.append(f"lockgate gate reject {rid} {shlex.quote(key)} --note \"...\"")
            waits.append({"kind": "gate", "step_id": key,
                          "reason": f"gate {key} waits for a decision (round {gate['round']}"
                                    f"{'/' + str(gate['max_rounds']) if gate['max_rounds'] else ''})",
                          "routes": routes, "token": gate["token"], "commands": commands})
        for key in run.outstanding:
            entry = dispatch_entry(run, key)
            waits.append({"kind": "dispatch", "step_id": key, "agent": entry["agent"],
                          "reason": f"step {key} is dispatched to agent {entry['agent']} (attempt "
                                    f"{entry['attempt']}, {entry['retries_remaining']} retries left) and waits "
                                    "for its result",
                          "token": entry["token"],
                          "commands": [f"lockgate run --resume {rid}", f"lockgate cancel {rid}"]})
        for key in run.evaluating:
            call = call_entry(run, key)
            waits.append({"kind": "evaluate", "step_id": key, "command": call["command"],
                          "started_at": call["started_at"],
                          "reason": f"evaluate step {key} is running its command {call['command']!r}; if the "
                                    "process running it is gone, resuming the run runs it again",
                          "commands": [f"lockgate run --resume {rid}", f"lockgate cancel {rid}"]})
        running = f" and {len(run.evaluating)} evaluate command(s)" if run.evaluating else ""
        summary = (f"run {rid} is running: {len(run.waiting)} gate(s) and {len(run.outstanding)} dispatch(es) "
                   f"outstanding{running}")
    elif header.status == RUN_COMPLETE:
        summary = f"run {rid} is complete; nothing to unblock"
    elif header.status == RUN_CANCELLED:
        summary = f"run {rid} was cancelled; it takes no more results"
    else:
        failure = header.failure or {}
        kind = "killed" if header.status == RUN_KILLED else f"failed ({header.error_type})"
        summary = f"run {rid} {kind}: {failure.get('reason', '')}"
        commands = [f"lockgate revert {rid} {shlex.quote(label)}" for label in header.checkpoints]
        waits.append({"kind": "finished", "step_id": failure.get("step"), "reason": summary,
                      "commands": commands or [f"lockgate audit {rid}"]})
    return {"run_id": rid, "status": header.status, "summary": summary, "waits": waits}
