"""One dispatch as the runner sees it: the entries a response hands out, the Task an entry
becomes for its agent, and the progress events the agent's result turns into.

Pure functions of an engine response and an agent result, kept apart from the loop that drives
a run (:mod:`lockgate.engine.drive`) so what an agent is told, and what observers hear about it,
can be read without the asyncio machinery around them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .agents import AgentResult, Task
from .agents.base import Usage
from .progress import Emitter

#: Responses that hand out work to dispatch (a retry's ensure/schema failure re-issues the step).
DISPATCH_STATUSES = ("execute_step", "ensure_failed", "schema_failed")


def dispatch_entries(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The dispatch entries of ``response``: its ``ready`` list, and the response itself when it
    is one ``do`` or fanout-item dispatch."""
    entries = list(response.get("ready") or [])
    if response.get("token") and response.get("kind") in ("do", "fanout_item"):
        entries.append({k: response[k] for k in response if k not in ("ready", "gates")})
    return entries


def dispatch_task(entry: Mapping[str, Any], *, run_id: str, agent: str,
                  workspace: str | None) -> Task:
    """The Task ``agent`` is sent for ``entry``: a retry carries the previous failure's reason and
    violations, revised work the gate's note; it works in the entry's cwd, else the workspace."""
    reason, violations = _feedback(entry)
    cwd = entry.get("cwd") or workspace or os.getcwd()
    return Task(run_id=run_id, step_id=entry["step_id"], prompt=str(entry.get("task") or ""),
                agent=agent, attempt=int(entry.get("attempt") or 1), previous_failure=reason,
                violations=violations, contract=entry.get("output_contract"),
                schema=entry.get("output_schema"), cwd=str(cwd),
                inputs=dict(entry.get("inputs") or {}))


def _feedback(entry: Mapping[str, Any]) -> tuple[str | None, tuple[Any, ...]]:
    """Why the previous attempt failed (or the revision asked for) and its violations."""
    previous = entry.get("previous_failure")
    violations: tuple[Any, ...] = ()
    reason = None
    if isinstance(previous, Mapping):
        violations = tuple(v for v in previous.get("violations") or () if isinstance(v, Mapping))
        reason = previous.get("reason")
    elif previous:
        reason = str(previous)
    return reason or revision_note(entry), violations


def revision_note(entry: Mapping[str, Any]) -> str | None:
    """The feedback for work a gate's revise sent back: the engine's ``revision`` on the dispatch
    (persisted, so it survives a restart), when the gate gave a note."""
    revision = entry.get("revision")
    if not isinstance(revision, Mapping) or not revision.get("note"):
        return None
    return f"revision requested at gate {revision.get('gate')!r}: {revision['note']}"


def reported_result(reported: Mapping[str, Any]) -> AgentResult:
    """The AgentResult of a dispatch's ``reported`` result (held by the engine while a judge
    was asked), to report it again as it was."""
    usage = reported.get("usage") or {}
    spent = Usage(tokens=int(usage.get("tokens", 0)), usd=float(usage.get("usd", 0.0)),
                  ms=float(usage["ms"]) if "ms" in usage else None)
    if reported.get("failure") is not None:
        return AgentResult.failed(str(reported["failure"]), usage=spent)
    return AgentResult.success(reported.get("result"), usage=spent)


def usage_of(result: AgentResult) -> dict[str, float] | None:
    """What ``result`` spent, for ``step_done`` (None when nothing): its non-zero usage, ``ms``
    being the call's measured duration unless the agent reported its own."""
    return result.spend() or None


def stage_data(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Which fanout, item and stage a fanout-item entry is, for its progress events."""
    if entry.get("kind") != "fanout_item":
        return {}
    return {"fanout": entry.get("fanout"), "item_index": entry.get("item_index"),
            "stage": entry.get("stage")}


def emit_outcome(emit: Emitter, run_id: str, entry: Mapping[str, Any], result: AgentResult,
                 response: Mapping[str, Any]) -> None:
    """The progress events for ``result`` once the engine answered its ``step_done`` with
    ``response``: failed (and retrying, when the step is issued again), or succeeded."""
    step_id, attempt = entry["step_id"], int(entry.get("attempt") or 1)
    common = {"step_id": step_id, "attempt": attempt, "agent": entry.get("agent")}
    violations = response.get("violations") or ()
    failed = failure_of(response, step_id)
    if failed is not None and _retried(response, step_id) and (response.get("failure") or {}).get("kind") == "iterate":
        # a round whose ``until`` does not hold yet did not fail: the step goes round again
        emit("step_retrying", run_id, step_id=step_id, attempt=int(response.get("attempt") or attempt + 1),
             agent=entry.get("agent"), message=_next_round(response))
    elif failed is not None:
        emit("step_failed", run_id, violations=violations if response.get("failed_step") == step_id else (),
             message=failed or result.failure, **common)
        if _retried(response, step_id):
            emit("step_retrying", run_id, step_id=step_id,
                 attempt=int(response.get("attempt") or attempt + 1),
                 agent=entry.get("agent"), violations=violations)
    else:
        emit("step_succeeded", run_id, data={
            "output": result.output, "usage": result.usage.to_json(),
            "duration_ms": result.telemetry.duration_ms, **stage_data(entry)}, **common)


def emit_evaluated(emit: Emitter, run_id: str, call: Mapping[str, Any], answer: Any,
                   response: Mapping[str, Any]) -> None:
    """The progress event for an evaluate command's ``answer`` (an
    :class:`~lockgate.engine.evaluate.Evaluated`) once the engine settled it with ``response``:
    the step failed (an evaluate step is never retried) or succeeded."""
    step_id = call["step_id"]
    common = {"step_id": step_id, "data": {"kind": "evaluate", "command": call["command"],
                                           "duration_ms": round(answer.took_ms, 3)}}
    failed = failure_of(response, step_id)
    if failed is not None:
        own = response.get("failed_step") == step_id or response.get("step_id") == step_id
        emit("step_failed", run_id, violations=response.get("violations") or () if own else (), message=failed,
             **common)
    else:
        emit("step_succeeded", run_id, **common)


def _next_round(response: Mapping[str, Any]) -> str:
    """What a progress line says of an iterate step going round again."""
    failure = response.get("failure") or {}
    until = next((v.get("until") for v in failure.get("violations") or () if v.get("until")), None)
    held = f": until {until!r} does not hold yet" if until else ""
    return f"round {failure.get('iteration')} of {failure.get('max')} done{held}"


def failure_of(response: Mapping[str, Any], step_id: str) -> str | None:
    """Why ``step_id``'s attempt failed in the call ``response`` answers ("" when no reason is
    given), or None when it did not fail: the response's failed step, one of its
    ``failed_steps`` (a subflow child whose failure ended the subflow), or the step an error
    names."""
    if response.get("failed_step") == step_id:
        return str((response.get("failure") or {}).get("reason") or "")
    failed_steps = response.get("failed_steps") or {}
    if step_id in failed_steps:
        return str(failed_steps[step_id] or "")
    if response.get("status") == "error" and response.get("step_id") == step_id:
        return str(response.get("message") or "")
    return None


def _retried(response: Mapping[str, Any], step_id: str) -> bool:
    """Whether ``response`` issues ``step_id`` again after an ensure or schema failure."""
    return response.get("status") in ("ensure_failed", "schema_failed") \
        and response.get("step_id") == step_id
