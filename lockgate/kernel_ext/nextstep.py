"""What a notebook says a run does next, in ``%flow`` terms: the line that resumes it (with the
``--agents`` variable it needs), and what a decision on a run no kernel drives left it doing (as
``lockgate gate approve`` says it with ``lockgate`` commands).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: statuses of an engine response that hand out work for agents
_WORK = ("execute_step", "ensure_failed", "schema_failed")
#: what an ended run's engine response says, for a person
_ENDED = {"complete": "complete", "killed": "killed", "cancelled": "cancelled", "error": "failed"}


def agents_variable(shell: Any, agents: Any) -> str | None:
    """The name of the user's variable holding ``agents`` (the same object), for the commands
    that resume its run after a kernel restart; None when none does (a literal dict)."""
    if shell is None or agents is None:
        return None
    return next((name for name, value in list(shell.user_ns.items())
                 if value is agents and not name.startswith("_")), None)


def resume_line(engine: Any, run_id: str) -> tuple[str, str | None]:
    """(the ``%flow resume`` line that continues run ``run_id`` here, a note about its
    ``--agents`` or None): a run driven with Python agents needs them again (the variable that
    held them, when recorded); one driven with a ``--agents`` module needs a dict of its
    functions."""
    from ..engine.agentorigin import module_of, python_agents

    try:
        origin = python_agents(engine, run_id)
        module = module_of(engine.last_agents(run_id)) if origin is None else None
    except Exception:  # noqa: BLE001 - a hint must not fail the decision it follows
        origin, module = None, None
    line = f"%flow resume {run_id}"
    if origin is not None and origin.variable:
        return f"{line} --agents {origin.variable}", None
    if origin is not None:
        return f"{line} --agents VAR", f"VAR: a dict of the Python agents it was driven with: {', '.join(origin.names)}"
    if module is not None:
        return f"{line} --agents VAR", f"VAR: a dict of the agents of {module}, which it was driven with"
    return line, None


def decided_lines(engine: Any, response: Mapping[str, Any]) -> list[str]:
    """What the run does after a decision made here on a run no kernel drives (the engine's
    ``response``), and the ``%flow`` lines that continue it."""
    run_id, status = str(response.get("run_id")), str(response.get("status"))
    if status in _WORK:
        ready = response.get("ready") or [response]
        return [f"run {run_id}: {len(ready)} step(s) to execute: " + ", ".join(str(r["step_id"]) for r in ready),
                *_continue(engine, response, "continue with")]
    if status == "await_gate":
        step = str(response.get("step_id"))
        lines = [f"run {run_id}: gate {step} waits for a decision; decide with:",
                 *(f"  {line}" for line in _decide(run_id, step, response))]
        return lines + _continue(engine, response, "then continue it with")
    if status in _ENDED:
        return _ended(run_id, status, response)
    return [f"run {run_id}: {status}", *_continue(engine, response, "continue with")]


def _continue(engine: Any, response: Mapping[str, Any], lead: str) -> list[str]:
    """The resume line and its note; or who drives the run (it carries on there)."""
    from ..engine.explain import commands_words, stopping_words

    if response.get("driven_by"):
        return [f"{response['driven_by']} is driving the run: it carries on there"]
    until = ""
    if response.get("stopping_by"):
        until = f"{stopping_words(response['stopping_by'])}; once it has exited, "
    elif response.get("commands_by"):
        steps = [str(e.get("step_id")) for e in response.get("evaluating") or ()]
        until = f"{commands_words(response['commands_by'], steps)}; once it ends, "
    line, note = resume_line(engine, str(response.get("run_id")))
    return [f"{until}{lead}: {line}", *([f"  ({note})"] if note else [])]


def _decide(run_id: str, step: str, gate: Mapping[str, Any]) -> list[str]:
    """The ``%flow`` lines that decide waiting gate ``step`` (revise only where offered)."""
    from .gates import offered

    words = {"approve": f"%flow approve {run_id} {step}", "revise": f"%flow revise {run_id} {step} --note '...'",
             "kill": f"%flow kill {run_id} {step}"}
    return [words[outcome] for outcome in offered(gate)]


def _ended(run_id: str, status: str, response: Mapping[str, Any]) -> list[str]:
    if status == "complete":
        return [f"run {run_id}: complete", f"output: {json.dumps(response.get('output'), sort_keys=True, default=str)}"]
    why = response.get("message") or response.get("reason")
    return [f"run {run_id}: {_ENDED[status]}" + (f" ({' '.join(str(why).split())})" if why else "")]
