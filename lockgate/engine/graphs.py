"""A run's flow graph with each step's status, for ``lockgate graph RUN`` and the notebook.

Maps the engine's step statuses onto the picture's palette: a step ``waiting_gate`` is drawn as
waiting, ``ready`` as ready, and the gate that killed a run as killed. Once the run has ended
(complete, failed, killed or cancelled) nothing waits or runs any more: a gate it left waiting and
a step it left running or dispatched are drawn as stopped, a step it never reached as not
reached. Fanout items and subflow children (``fan/3``, ``wrap/digest``) colour their parent step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import networkx as nx

from ..dsl.graph import flow_graph
from ..dsl.ir import Spec, build_spec
from .model import SPEC_KEY
from .specdata import unpack_spec_record

ENGINE_TO_PICTURE = {
    "pending": "pending",
    "ready": "ready",
    "running": "running",
    "waiting_gate": "waiting",
    "succeeded": "succeeded",
    "failed": "failed",
    "skipped": "skipped",
}
# What a step that never finished is drawn as once its run has ended.
ENDED_RUN = {"waiting": "stopped", "running": "stopped", "ready": "stopped", "retrying": "stopped",
             "pending": "not_reached"}


def stored_spec(store: Any, run_id: str) -> Spec:
    """The spec a run was planned with, rebuilt from the store alone."""
    stored = store.load_run(run_id)
    data, _ = unpack_spec_record(stored.steps.get(SPEC_KEY), run_id)
    return build_spec(data)


def picture_statuses(audit: Mapping[str, Any]) -> dict[str, str]:
    """Root step id -> picture status, from an :meth:`Engine.audit` record."""
    statuses: dict[str, str] = {}
    for entry in audit.get("trace", []):
        step_id = str(entry.get("step_id", ""))
        if "/" in step_id:
            continue
        status = ENGINE_TO_PICTURE.get(entry.get("status", ""), "pending")
        if status == "ready" and entry.get("attempts", 0) >= 1:
            status = "retrying"
        statuses[step_id] = status
    if audit.get("status", "running") != "running":
        statuses = {step: ENDED_RUN.get(status, status) for step, status in statuses.items()}
    if audit.get("status") == "killed":
        for event in reversed(audit.get("events", [])):
            if event.get("type") == "gate_resolved" and (event.get("detail") or {}).get("decision") == "kill":
                statuses[event["step_id"]] = "killed"
                break
    return statuses


def run_graph(store: Any, run_id: str) -> tuple[nx.DiGraph, dict[str, str], str]:
    """(graph, statuses, title) of a stored run; RunNotFound when the store has no such run."""
    from .engine import Engine

    spec = stored_spec(store, run_id)
    audit = Engine(store=store).audit(run_id)
    flow = audit.get("flow") or spec.entry
    title = f"run {run_id} ({flow}): {audit.get('status')}"
    return flow_graph(spec, flow), picture_statuses(audit), title
