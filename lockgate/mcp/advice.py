"""What to do next: the one-line guidance added to tool results, and tool errors that say how to
recover.

Every refusal of the engine keeps its machine-readable form (``EngineError.to_dict()``: status
``error``, ``error_type``, message, detail) as the error's structured content; the text adds one
sentence on how to recover, chosen by ``error_type``, so an agent can act without guessing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine.evaluate import left_behind
from ..engine.explain import action, commands_words, render, retries, stopping_words
from ..errors import EngineError, LockgateError, SpecError, StoreError
from .excerpts import cut_quotes
from .runners import GONE

MAX_DIAGNOSTICS = 20


def _stale(detail: dict[str, Any]) -> str:
    reason = detail.get("reason")
    if reason == "missing":
        return "Pass the `token` of the dispatch or gate you are answering."
    if reason == "decided":
        return (f"Another decision ({detail.get('decision')}, by {detail.get('resolved_by')}) was taken first; "
                "yours was not applied. Call lockgate_status for what the run waits on now.")
    if reason == "differs":  # who sent the first report is not known: maybe this very session
        return ("An earlier report made with this token (perhaps your own) was accepted and the run went on with "
                "it; yours was not applied, and a token takes one report. To change the accepted result, have a "
                "gate that reviews it send it back (revise, with lockgate_gate_resolve), or go back to a "
                "checkpoint taken before it with lockgate_revert. lockgate_audit's trace shows the accepted "
                "output, and lockgate_status the run's current work.")
    if reason == "duplicate":
        return ("That result was already accepted; nothing more to do for it. Call lockgate_status for the "
                "run's current work.")
    return ("Use the token from the most recent response for this step (a retry, a revise or a revert issues "
            "a new one); call lockgate_status to see the current dispatches and their tokens.")


_ADVICE: dict[str, Callable[[dict[str, Any]], str]] = {
    "invalid_arguments": lambda d: "Fix the arguments as described and call the tool again; nothing was changed.",
    "run_not_found": lambda d: "Check the run id; lockgate_runs lists the runs in this server's store.",
    "stale_token": _stale,
    "input_validation_failed": lambda d: ("Give `inputs` that match the flow's `input` fields exactly (no extra "
                                          "fields, right types) and call lockgate_plan again; no run was started."),
    "unknown_flow": lambda d: f"Use one of the spec's flows: {', '.join(d.get('flows', [])) or 'none'}.",
    "unknown_step": lambda d: ("Use a step_id exactly as a dispatch or gate gave it; lockgate_status lists the "
                               "run's current work."),
    "not_awaiting": lambda d: (f"Step {d.get('step_id')} is {d.get('step_status')}: it is not waiting for this. "
                               "Call lockgate_status for what the run waits on now."),
    "run_finished": lambda d: ("The run is over: call lockgate_audit for its record, lockgate_revert to go back to "
                               "a checkpoint, or lockgate_plan to start a new run."),
    "run_cancelled": lambda d: "The run was cancelled and takes no more calls; start a new run with lockgate_plan.",
    "flow_cancelled": lambda d: "The run was cancelled and takes no more calls; start a new run with lockgate_plan.",
    "invalid_decision": lambda d: "Use outcome approve, revise or kill (reject is kill).",
    "revise_unavailable": lambda d: ("Nothing was changed; the gate still waits with the same token. Tell the user "
                                     "revise is not possible here and ask them to approve or kill, then call "
                                     "lockgate_gate_resolve again."),
    "carry_revise_unresolved": lambda d: ("Nothing was changed; the gate still waits with the same token. Tell the "
                                          "user why the revise cannot be taken now and ask them to approve or kill "
                                          "(or to revise once that value is available), then call "
                                          "lockgate_gate_resolve again."),
    "invalid_label": lambda d: "Give a non-empty checkpoint label.",
    "checkpoint_not_found": lambda d: ("Use a label committed with lockgate_commit (lockgate_audit lists "
                                       "`checkpoints`)."),
    "fanout_in_flight": lambda d: "Report the outstanding fanout items first, then commit or revert.",
    "concurrency_conflict": lambda d: "Another process kept changing this run; call the tool again.",
    "spec_digest_mismatch": lambda d: ("The run's stored spec was altered; check the store with `lockgate verify "
                                       "RUN` and start a new run."),
    "workspace_missing": lambda d: ("The run's workspace is on another machine (a shared store): continue "
                                    "the run where that folder exists. Nothing was changed."),
    "corrupt_run": lambda d: "The stored run is damaged; check it with `lockgate verify RUN` and start a new run.",
}


def tool_error(exc: BaseException, quoting: Any = None) -> tuple[str, dict[str, Any]]:
    """(message, structured detail) of a refused or failed tool call; the long strings of
    ``quoting`` (the call's name and arguments) that they quote are cut to an excerpt (see
    :mod:`lockgate.mcp.excerpts`)."""
    return cut_quotes(*_tool_error(exc), quoting)


def _tool_error(exc: BaseException) -> tuple[str, dict[str, Any]]:
    if isinstance(exc, EngineError):
        data = exc.to_dict()
        hint = _ADVICE.get(exc.error_type, lambda d: "Nothing was changed; see the message.")(dict(exc.detail))
        return f"{exc.error_type}: {exc.message}{_violations(exc.detail)}\n{hint}", data
    if isinstance(exc, SpecError):
        return _spec_error(exc)
    if isinstance(exc, StoreError):
        return (f"store_error: {exc}\nThe run store could not be read or written; check the server's --store "
                "setting and that the database is reachable.", {"status": "error", "error_type": "store_error",
                                                                  "message": str(exc)})
    if isinstance(exc, LockgateError):
        kind = type(exc).__name__
        return f"{kind}: {exc}", {"status": "error", "error_type": kind, "message": str(exc)}
    text = f"{type(exc).__name__}: {exc}"
    return (f"internal_error: {text}\nThis is a Lockgate bug; call lockgate_status to see whether the run "
            "changed, and report the message.", {"status": "error", "error_type": "internal_error", "message": text})


def _violations(detail: dict[str, Any]) -> str:
    items = detail.get("violations") or []
    lines = [f"\n  - {v.get('path', '')}: {v.get('message', '')}" for v in items if isinstance(v, dict)]
    return "".join(lines[:MAX_DIAGNOSTICS])


def _spec_error(exc: SpecError) -> tuple[str, dict[str, Any]]:
    errors = [d for d in exc.diagnostics if getattr(d, "is_error", True)]
    shown = errors[:MAX_DIAGNOSTICS]
    report = "\n".join(f"- {d.range.start.line + 1}:{d.range.start.character + 1} {d.code} {d.message}"
                       + (f" (hint: {d.hint})" if d.hint else "") for d in shown)
    more = f"\n... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
    message = (f"spec_invalid: {exc}\n{report}{more}\nFix every error (line:column, 1-based) and call the tool "
               "again; lockgate_validate checks a spec without starting a run.")
    data = {"status": "error", "error_type": "spec_invalid", "message": str(exc),
            "errors": [d.to_dict() for d in errors]}
    return message, data


def _rejection(result: dict[str, Any]) -> str:
    """Why the last attempt was rejected: its violations, or the failure's reason when it has none
    (a reported failure, invalid usage, a budget), which an agent must read to do better."""
    violations = result.get("violations") or []
    if violations:
        first = violations[0]
        text = first.get("message") or first.get("reason") if isinstance(first, dict) else first
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        return f"{text}{more}."
    reason = (result.get("previous_failure") or {}).get("reason")
    return f"{reason}." if reason else "the attempt failed."


def _next_round(result: dict[str, Any], done: dict[str, Any]) -> str:
    """The response dispatches the next round of an ``iterate`` step whose ``until`` did not hold
    for the round just reported: nothing was rejected, the step is to be done again."""
    return (f"{_round_done(done)} Run it again: improve on your last result and call lockgate_step_done with "
            f"the new token {result.get('token')} (round {result.get('iteration')} of {done.get('max')}).")


def _round_done(done: dict[str, Any]) -> str:
    """Which round of which ``iterate`` step was done, and the ``until`` that does not hold yet."""
    why = done.get("reason")
    return (f"Round {done.get('round')} of {done.get('max')} of step {done.get('step_id')} done: until "
            f"`{done.get('until')}` does not hold yet{f' ({why})' if why else ''}.")


#: The ``store`` of a server whose runs live in its own memory: no person's command reaches them.
IN_MEMORY = "memory"


def _gate_command(run: Any, step: Any, store: str | None) -> str:
    """The command a person approves the gate with, reaching the server's ``store``."""
    act = action("gate approve", str(run), str(step))
    return render(act) if store is None else render(act, store=store)


def _gone(run: Any, steps: str) -> str:
    """The process that ran the run's evaluate commands is gone (``runner_gone``)."""
    return (f"Nothing runs the command of evaluate step(s) {steps} of run {run} any more: the process running it "
            f"is gone, and its command was stopped with it. Call lockgate_resume with run_id {run} to run it again here.")


def next_steps(result: dict[str, Any], *, store: str | None = None) -> str | None:
    """One line telling the agent what the response asks of it (None for non-protocol results);
    ``store``: the ``--store`` a person's command needs to reach the server's store."""
    line = _next_step(result, store)
    if result.get(GONE) and result.get("status") != "evaluating":
        steps = ", ".join(str(e.get("step_id")) for e in result.get("evaluating") or ())
        line = f"{line} Then: {_gone(result.get('run_id'), steps)}" if line else _gone(result.get("run_id"), steps)
    return line


def _next_step(result: dict[str, Any], store: str | None) -> str | None:
    status, run = result.get("status"), result.get("run_id")
    if result.get("driven_by") and status in ("execute_step", "ensure_failed", "schema_failed", "evaluating"):
        return (f"Run {run} is being driven by {result['driven_by']}: its agents are doing the dispatched steps, so "
                "do not do them too. Call lockgate_status with wait_seconds to follow it (or lockgate_cancel to "
                "stop it).")
    if result.get("stopping_by") and status in ("execute_step", "ensure_failed", "schema_failed", "evaluating"):
        return (f"Run {run}'s driver, {stopping_words(result['stopping_by'])}: its agents may still be finishing "
                "the dispatched steps. Call lockgate_status with wait_seconds until it has exited (no stopping_by), "
                "then go on from what it says.")
    if result.get("commands_by") and status in ("execute_step", "ensure_failed", "schema_failed"):
        steps = [str(e.get("step_id")) for e in result.get("evaluating") or ()]
        return (f"{commands_words(result['commands_by'], steps)} and nothing else: nobody does the dispatched "
                f"steps, they are left to you. {_protocol_step(result, store)}")
    return _protocol_step(result, store)


def _protocol_step(result: dict[str, Any], store: str | None = None) -> str | None:
    """The next step the response's status asks of the agent, as if nobody else held the run."""
    status, run = result.get("status"), result.get("run_id")
    if status in ("ensure_failed", "schema_failed"):
        return (f"Rejected ({status}): {_rejection(result)} Redo step {result.get('step_id')} and call "
                f"lockgate_step_done with the new token {result.get('token')} "
                f"({retries(result.get('retries_remaining'))} left after that).")
    if status == "execute_step":
        ready = result.get("ready") or []
        held = next((entry for entry in [result, *ready] if entry.get("reported") is not None), None)
        if held is not None:
            return (f"Step {held.get('step_id')}'s result was received before the run stopped (in its `reported`): "
                    f"call lockgate_step_done with it and token {held.get('token')}; no need to redo the work.")
        done = result.get("iterated")
        if isinstance(done, dict) and done.get("step_id") == result.get("step_id"):
            return _next_round(result, done)
        lead = f"{_round_done(done)} It runs again once dispatched. " if isinstance(done, dict) else ""
        others = f" ({len(ready)} dispatches ready, each with its own token)" if len(ready) > 1 else ""
        return (f"{lead}Next: do step {result.get('step_id')} and call lockgate_step_done with run_id {run}, its "
                f"step_id and token {result.get('token')}{others}.")
    if status == "await_gate":
        decided = next((g for g in [result, *(result.get("gates") or ())] if g.get("decided")), None)
        if decided is not None:
            held = decided["decided"]
            return (f"Gate {decided.get('step_id')} was decided ({held.get('outcome')}, by {held.get('resolved_by')}) "
                    "before the process applying it stopped (in its `decided`): call lockgate_gate_resolve with "
                    f"that decision and token {decided.get('token')}; no need to ask again.")
        offered = " / ".join(result.get("decisions") or ("approve", "revise", "kill"))
        ask = (f"Gate {result.get('step_id')} waits for a decision: ask the user ({offered}) and "
               f"call lockgate_gate_resolve with token {result.get('token')}")
        if store == IN_MEMORY:
            return f"{ask} (this server keeps its runs in memory: no terminal can reach them)."
        return (f"{ask}, or let a person decide with `{_gate_command(run, result.get('step_id'), store)}` and call "
                "lockgate_status with wait_seconds.")
    if status == "evaluating":
        steps = ", ".join(str(e.get("step_id")) for e in result.get("evaluating") or ()) or "(none listed)"
        if result.get(GONE):
            return _gone(run, steps)
        if left_behind(result):
            return (f"Run {run} shows evaluate step(s) {steps} running long past their timeout: the process "
                    f"running them is gone. Call lockgate_resume with run_id {run} to run them again here.")
        return (f"Run {run} is running the command of evaluate step(s) {steps} (started by another call or "
                f"process); call lockgate_status with wait_seconds for the outcome.")
    if status == "complete":
        return f"Run {run} is complete. Call lockgate_audit for its full trace."
    if status in ("error", "killed"):
        why = result.get("message") or result.get("error_type")
        return (f"Run {run} ended ({status}{f': {why}' if why else ''}). lockgate_why says more; a checkpoint "
                "taken with lockgate_commit can be restored with lockgate_revert.")
    if status == "cancelled":
        return f"Run {run} is cancelled."
    return None

