"""``why``: what a run is waiting on, in words, with the exact command that unblocks each wait,
and why the steps before it (or, once it ended, any of its steps) were skipped.

Each wait names its commands twice: as ``actions`` (``{"command": ["gate", "approve"], "args":
[run, step], "options": {"note": "..."}}``), which a caller extends by structure (the CLI adds
the ``--store`` it was given), and as ``commands``, those actions written out by :func:`render`.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from .drivers import Driver, holding
from .ensures import not_true
from .evaluate import call_entry
from .live import LiveRun
from .model import RUN_CANCELLED, RUN_COMPLETE, RUN_KILLED, RUN_RUNNING, SKIPPED
from .responses import dispatch_entry, gate_entry

#: The value of an option the user writes in (a gate decision's note), shown as ``"..."``
FILL_IN = "..."
#: How the wait of an evaluate command no live process holds ends (its process may be alive,
#: about to claim the run, or gone: a caller that can tell says which)
IF_GONE = "; if the process running it is gone, resuming the run runs it again"
#: How the wait of a gate decided before the process applying it stopped ends
RESUMING_APPLIES = "; resuming the run applies it"
#: How many skipped steps the summary names (the others are counted; ``skipped`` lists them all)
SKIPS_NAMED = 3


def action(command: str, *args: str, **options: str) -> dict[str, Any]:
    """``lockgate COMMAND ARGS... --OPTION VALUE...`` as data (COMMAND's words split)."""
    return {"command": command.split(), "args": list(args), "options": options}


def render(act: Mapping[str, Any], **more: str) -> str:
    """``act`` as a command line, then the options ``more``: words quoted for a POSIX shell,
    :data:`FILL_IN` shown as ``"..."`` (a text to write, in the quotes it will need)."""
    words = ["lockgate", *act["command"], *act["args"]]
    for name, value in {**act["options"], **more}.items():
        words += [f"--{name.replace('_', '-')}", value]
    return " ".join('"..."' if word == FILL_IN else shlex.quote(word) for word in words)


def explain(run: LiveRun) -> dict[str, Any]:
    """``{run_id, status, summary, waits: [{kind, step_id, reason, actions, commands}], skipped:
    [{step_id, reason, taken}]}`` (see :func:`skipped_steps`; the summary names the first of them)."""
    header = run.header
    rid = header.id
    waits: list[dict[str, Any]] = []
    if header.status == RUN_RUNNING:
        holder = holding(run.driver)
        driving = holder is not None and not holder.stopping and not holder.commands_only
        working = working_words(holder, list(run.evaluating))
        unblocked = _unblocked_by([action("cancel", rid)] if driving else _resume_or_cancel(rid))
        for key in run.waiting:
            gate = gate_entry(run, key)
            if "decided" in gate:  # decided, not applied yet: the process applying it stopped
                held = gate["decided"]
                waits.append({"kind": "gate", "step_id": key, "routes": gate["routes"], "token": gate["token"],
                              "reason": f"gate {key} was decided ({held['outcome']}, by {held['resolved_by']}) "
                                        f"before the process applying it stopped{RESUMING_APPLIES}",
                              **unblocked})
                continue
            verbs = ["approve", *(["revise"] if "revise" in gate["decisions"] else []), "reject"]
            waits.append({"kind": "gate", "step_id": key, "reason": gate_reason(gate),
                          "routes": gate["routes"], "token": gate["token"],
                          **_unblocked_by([action(f"gate {verb}", rid, key, note=FILL_IN) for verb in verbs])})
        for key in run.outstanding:
            entry = dispatch_entry(run, key)
            waits.append({"kind": "dispatch", "step_id": key, "agent": entry["agent"],
                          "reason": f"step {key} is dispatched to agent {entry['agent']} (attempt "
                                    f"{entry['attempt']}, {retries(entry['retries_remaining'])} left) and waits "
                                    f"for its result{working}",
                          "token": entry["token"], **unblocked})
        for key in run.evaluating:
            call = call_entry(run, key)
            waits.append({"kind": "evaluate", "step_id": key, "command": call["command"],
                          "started_at": call["started_at"],
                          "reason": f"evaluate step {key} is running its command {call['command']!r}"
                                    + (working_words(holder, [], "evaluate") if holder is not None else IF_GONE),
                          **unblocked})
        running = f" and {counted(len(run.evaluating), 'evaluate command')}" if run.evaluating else ""
        driven = working_words(holder, list(run.evaluating), "run")
        summary = (f"run {rid} is running: {counted(len(run.waiting), 'gate')} and "
                   f"{counted(len(run.outstanding), 'dispatch', 'dispatches')} "
                   f"outstanding{running}{driven}")
    elif header.status == RUN_COMPLETE:
        summary = f"run {rid} is complete; nothing to unblock"
    elif header.status == RUN_CANCELLED:
        summary = f"run {rid} was cancelled; it takes no more results"
    else:
        failure = header.failure or {}
        kind = "killed" if header.status == RUN_KILLED else f"failed ({header.error_type})"
        summary = f"run {rid} {kind}: {failure.get('reason', '')}"
        reverts = [action("revert", rid, label) for label in header.checkpoints]
        # the summary says how it ended: the wait says what can be done about it
        reason = ("reverting to a checkpoint continues it from there" if reverts else
                  "nothing continues it (it saved no checkpoint); its audit trail shows what happened")
        waits.append({"kind": "finished", "step_id": failure.get("step"), "reason": reason,
                      **_unblocked_by(reverts or [action("audit", rid)])})
    skipped = skipped_steps(run)
    return {"run_id": rid, "status": header.status, "summary": summary + skips_words(skipped), "waits": waits,
            "skipped": skipped}


def skipped_steps(run: LiveRun) -> list[dict[str, Any]]:
    """The skipped steps that tell why the run is where it is, each as ``{step_id, reason,
    taken}`` (see :func:`skip_reason`): while it runs, those before what it waits on (a gate,
    a dispatch, an evaluate command: the steps whose branch it is on, ``CFlow.upstream``);
    once it ended, every skipped step of its flow."""
    steps = run.steps
    if run.header.status != RUN_RUNNING:
        keys = [key for key in run.root.flow.order if steps[key].status == SKIPPED]
    else:
        keys = [key for key in _before_waits(run) if steps[key].status == SKIPPED]
    return [{"step_id": key, **skip_reason(run, key)} for key in keys]


def _before_waits(run: LiveRun) -> list[str]:
    """The keys of the steps before each one the run waits on, that one's own included (in its
    subflow too, for a wait inside one), in declaration order."""
    root = run.root.flow
    before: set[str] = set()
    inner: dict[str, None] = {}
    for key in (*run.waiting, *run.outstanding, *run.evaluating):
        head, _, tail = key.partition("/")
        before |= root.upstream(head)
        if tail and root.steps[head].kind == "run":  # a subflow's child (a fanout's item: its index)
            scope = run.scope_of(head)
            inner.update(dict.fromkeys(scope.prefix + sid for sid in scope.flow.order
                                       if sid in scope.flow.upstream(tail)))
    return [key for key in root.order if key in before] + list(inner)


def skip_reason(run: LiveRun, key: str) -> dict[str, Any]:
    """Why step ``key`` was skipped, in the words of its ``skipped`` event (which ``lockgate
    show`` prints; ``why`` reads the run's state, not its events): ``{reason, taken}``, ``taken``
    being the steps taken instead of its branch (None when it is on no branch not taken)."""
    st = run.steps[key]
    reason = st.skip_reason if st.skip_reason is not None else _reason_rebuilt(run, key)
    return {"reason": reason, "taken": st.untaken}


def _reason_rebuilt(run: LiveRun, key: str) -> str:
    """Why a step of a run stored before records kept their skip's reason was skipped, worked out
    again from the run's state (a ``when`` that failed reads as one that was not true)."""
    located = run.locate(key)
    cstep, st = located.cstep, run.steps[key]
    if cstep.routed_only and st.routed is None:
        from .advance import NO_ROUTE_TAKEN

        return NO_ROUTE_TAKEN
    if st.untaken is not None:
        return _branch_words(run, located.scope, cstep)
    if cstep.when is not None:
        return not_true(cstep.when.source)
    if located.scope.parent is not None:
        from .subflows import SUBFLOW_ENDED

        return SUBFLOW_ENDED
    return "the run's audit trail says why"


def _branch_words(run: LiveRun, scope: Any, cstep: Any) -> str:
    """Which dependency put ``cstep`` on a branch not taken, as the engine chose it when it
    skipped the step (:func:`~lockgate.engine.advance.untaken_by`)."""
    from .advance import branches_not_taken, untaken_by, untaken_reason  # the engine's rule itself

    untaken = branches_not_taken(run, scope, cstep)
    cut = untaken_by(run, scope, cstep, untaken) if untaken else None
    return untaken_reason(run, scope, cut[0], cstep.id) if cut is not None else "it is on a branch not taken"


def skips_words(skipped: list[dict[str, Any]]) -> str:
    """The summary's end naming the first :data:`SKIPS_NAMED` of ``skipped`` (:func:`skipped_steps`)
    with why: "; skipped: deploy (dependency build failed and was routed to its on_fail step; the
    branch taken: recover), and 2 more"; "" for none."""
    if not skipped:
        return ""
    named = ", ".join(map(_skip_words, skipped[:SKIPS_NAMED]))
    more = len(skipped) - SKIPS_NAMED
    return f"; skipped: {named}" + (f", and {more} more" if more > 0 else "")


def _skip_words(skip: Mapping[str, Any]) -> str:
    """One skipped step with why: "polish (when "x" is not true)"."""
    taken = f"; the branch taken: {', '.join(skip['taken'])}" if skip["taken"] else ""
    return f"{skip['step_id']} ({skip['reason']}{taken})"


def gate_reason(gate: Mapping[str, Any]) -> str:
    """What a waiting gate (its :func:`gate_entry`) waits for, with the revision limit that
    applies to it (the gate's or the flow's ``max_rounds``, whichever a revise meets first) and,
    when its revise route cannot be taken, that a revise would fail the run."""
    words = round_limit_words(gate)
    rounds = f" ({words})" if words else ""
    unavailable = gate.get("revise_unavailable") if gate["routes"].get("revise") else None
    return f"gate {gate['step_id']} waits for a decision{rounds}" + (f"; {unavailable}" if unavailable else "")


def round_limit_words(gate: Mapping[str, Any]) -> str | None:
    """A waiting gate's revision limit in words ("round 1/2, the gate's max_rounds"): the
    ``round_limit`` of its :func:`gate_entry`, None when it has none (it sends no work back, or
    no ``max_rounds`` bounds it). Shared by ``why`` and the terminal gate prompt."""
    limit = gate.get("round_limit")
    if not limit:
        return None
    return f"round {limit['used']}/{limit['max']}, the {limit['set_by']}'s max_rounds"


def working_words(holder: Driver | None, evaluating: list[str], on: str = "wait") -> str:
    """Who works ``on`` a ``"wait"`` (a dispatch), an ``"evaluate"`` command or, for the summary,
    the ``"run"``: the live process driving the run, if one does. One whose drive is stopping
    (Ctrl-C) does nothing more and keeps a resume out until it has exited; one that only runs
    the commands of ``evaluating`` does no dispatch: they wait for a resume after them."""
    if holder is None:
        return ""
    who = holder.describe()
    if holder.stopping:
        return f"; {stopping_words(who)}; resume once it has exited"
    if holder.commands_only and on == "evaluate":
        return f"; {who} is running it"
    if holder.commands_only:
        nobody = "nobody is doing it: " if on == "wait" else ""
        return f"; {nobody}{commands_words(who, evaluating)}; once that ends, resume the run to continue with agents"
    return f"; {who} is driving " + ("it" if on == "run" else "the run")


def stopping_words(who: str) -> str:
    """A drive that is stopping, for a person (``who``: its process described): "process 812 on
    this host is stopping (Ctrl-C)"."""
    return f"{who} is stopping (Ctrl-C)"


def commands_words(who: str, steps: list[str]) -> str:
    """A claim that only runs commands, for a person (``who``: its process described): "process
    812 on this host is running the command of step c1" (``steps``: the evaluate steps running)."""
    return f"{who} is running {command_of(steps)}"


def command_of(steps: list[str]) -> str:
    """"the command of step c1", "the commands of steps c1, c2" ("its commands" for none known)."""
    if not steps:
        return "its commands"
    return f"the command of step {steps[0]}" if len(steps) == 1 else f"the commands of steps {', '.join(steps)}"


def _resume_or_cancel(rid: str) -> list[dict[str, Any]]:
    """Continue the run with agents, or end it."""
    return [action("run", resume=rid), action("cancel", rid)]


def _unblocked_by(actions: list[dict[str, Any]]) -> dict[str, Any]:
    """A wait's ``actions`` and ``commands``: the same commands as data and as text."""
    return {"actions": actions, "commands": [render(act) for act in actions]}


def counted(count: int, one: str, many: str | None = None) -> str:
    """``count`` things in words: "1 gate", "2 gates", "0 dispatches"."""
    return f"{count} {one if count == 1 else many or one + 's'}"


def retries(count: object) -> str:
    """``count`` retries, in words ("1 retry", "2 retries")."""
    return "1 retry" if count == 1 else f"{count} retries"
