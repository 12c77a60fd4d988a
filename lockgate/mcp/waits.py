"""``lockgate_why`` for an MCP agent: each wait says which tool call ends it.

``Engine.why`` is written for a person at a terminal: it ends the wait of a dispatched step with
``lockgate run --resume RUN``, which hands the step to a built-in agent (``claude -p``), and
writes its commands for the default store. Over MCP the caller is the agent doing the steps (the
server drives no agents), so each wait gets ``tools``, the calls that end it (``{tool,
arguments, also}``: ``also`` names the arguments the agent adds), and keeps as ``actions`` /
``commands`` only what a person does at a terminal (a gate's decision), written with the
server's ``--store``. The engine's answer is otherwise unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.drivers import Driver
from ..engine.explain import IF_GONE, RESUMING_APPLIES, render, working_words
from .advice import IN_MEMORY

#: How long a suggested ``lockgate_status`` waits (seconds).
WAIT_SECONDS = 60


def tool(name: str, also: tuple[str, ...] = (), **arguments: Any) -> dict[str, Any]:
    """A tool call that ends a wait: ``arguments`` given, ``also`` the ones the agent adds."""
    return {"tool": name, "arguments": arguments, "also": list(also)}


def for_agent(why: Mapping[str, Any], current: Mapping[str, Any], holder: Driver | None, *, gone: bool,
              store: str | None = None) -> dict[str, Any]:
    """``why`` (``Engine.why``) with each wait told in tool calls. ``current``: the run's status
    (who else holds the run: ``driven_by``, ``stopping_by``); ``holder``: the live process
    holding the run, if one does; ``gone``: its evaluate commands were left by a process that
    is gone (see :mod:`lockgate.mcp.runners`); ``store``: the ``--store`` a person's command needs."""
    run = why["run_id"]
    elsewhere = bool(current.get("driven_by") or current.get("stopping_by"))
    evaluating = [str(w["step_id"]) for w in why["waits"] if w.get("kind") == "evaluate"]
    suffix = working_words(holder, evaluating) if holder is not None and holder.commands_only else ""
    decided = {g.get("step_id"): g["decided"] for g in current.get("gates") or () if g.get("decided")}
    return {**why, "waits": [_wait(run, dict(w), elsewhere, gone, suffix, decided, store) for w in why["waits"]]}


def _wait(run: str, wait: dict[str, Any], elsewhere: bool, gone: bool, suffix: str,
          decided: Mapping[Any, Mapping[str, Any]], store: str | None) -> dict[str, Any]:
    kind, step = wait.get("kind"), wait.get("step_id")
    person: list[dict[str, Any]] = []
    if kind == "gate" and step in decided:  # decided before the process applying it stopped: apply it
        wait["reason"] = wait["reason"].removesuffix(RESUMING_APPLIES) + "; applying it takes no new decision"
        tools = [tool("lockgate_gate_resolve", ("rationale", "resolved_by"), run_id=run, step_id=step,
                      token=wait.get("token"), outcome=decided[step].get("outcome"))]
    elif kind == "gate":  # a person's decision, asked by the agent or made at a terminal
        person = [act for act in wait.get("actions") or () if act.get("command", [None])[0] == "gate"]
        tools = [tool("lockgate_gate_resolve", ("outcome", "rationale", "resolved_by"), run_id=run, step_id=step,
                      token=wait.get("token"))]
    elif kind == "dispatch" and elsewhere:
        tools = [tool("lockgate_status", run_id=run, wait_seconds=WAIT_SECONDS), tool("lockgate_cancel", run_id=run)]
    elif kind == "dispatch":
        if suffix and wait["reason"].endswith(suffix):  # "nobody is doing it ... resume to continue with agents"
            wait["reason"] = wait["reason"].removesuffix(suffix) + "; it is yours to do"
        tools = [tool("lockgate_step_done", ("result",), run_id=run, step_id=step, token=wait.get("token"))]
    elif kind == "evaluate" and gone:
        wait["reason"] = wait["reason"].removesuffix(IF_GONE) + "; the process running it is gone"
        tools = [tool("lockgate_resume", run_id=run)]
    elif kind == "evaluate":
        tools = [tool("lockgate_status", run_id=run, wait_seconds=WAIT_SECONDS)]
    else:  # finished: revert to a checkpoint, or read the audit
        tools = [tool("lockgate_revert", run_id=run, label=act["args"][1]) for act in wait.get("actions") or ()
                 if act.get("command") == ["revert"]] or [tool("lockgate_audit", run_id=run)]
    if store == IN_MEMORY:  # no terminal reaches the runs this server keeps in memory
        person = []
    elif store is not None:
        person = [{**act, "options": {**act["options"], "store": store}} for act in person]
    return {**wait, "actions": person, "commands": [render(act) for act in person], "tools": tools}
