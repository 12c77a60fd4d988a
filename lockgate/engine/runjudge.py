"""Which judge judges a run, asked from here: one answer for every surface that moves a run on
without agents of its own (``lockgate gate``, ``lockgate resume``, ``lockgate revert``, a
notebook's ``%flow approve|revise|kill`` of a run no kernel drives, the MCP server's tools).

A run driven with ``--judge NAME`` (``judge=`` by name) records NAME with its claim
(``Engine.last_judge``). When its flow has judged ensures, that name is its judge wherever the
run is moved on: resolved through lockgate.toml when the configuration found here is the one
the run recorded (as ``lockgate run --resume`` resolves it, see ``Runner._check_config``), and
refused otherwise, before anything is decided:

- the name was one of the Python functions that drive was given (an ``--agents`` module's, a
  notebook's): no process but one given them again can have it (the CLI's ``gate``, ``resume``
  and ``revert`` take ``--agents MODULE`` for that);
- this folder finds another configuration file than the run's: the name could resolve to
  another adapter there;
- nothing here is named so.

A run that recorded no judge is judged by the project's ``judge =`` (lockgate.toml nearest from
here), as before; a flow with no judged ensures needs no judge. Judged ensures never silently
fail closed for want of the judge the run was driven with.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, LockgateError

if TYPE_CHECKING:
    from .agentorigin import PythonAgents

#: ``detail["problem"]`` of a :class:`RunJudge` refusal: the recorded judge was a Python function
PYTHON_JUDGE = "recorded_judge_python"
#: ... this folder finds another configuration file than the one the run recorded
OTHER_CONFIG = "recorded_judge_other_config"
#: ... no agent here has the recorded judge's name
NO_SUCH_JUDGE = "recorded_judge_not_here"


#: ``project=`` not given to :func:`run_judge`: the project's judge is found from ``here``
FIND: Any = object()


@dataclass(frozen=True)
class RunJudge:
    """The answer of :func:`run_judge`: ``judge`` (None: no judge, judged ensures fail closed,
    or none needed), the recorded ``name`` it was resolved from (None: the project's, or none),
    ``problem`` (lockgate.toml could not give its judge: said as a warning, as before) or
    ``refusal`` (no command here may move the run on; nothing is to be changed)."""

    judge: Any = None
    name: str | None = None
    problem: str | None = None
    refusal: ConfigError | None = None
    needed: bool = True


def run_judge(engine: Any, run_id: str, here: Path, *, decision: tuple[str, str] | None = None,
              rehydrate: bool = False, reverting: bool = False,
              resolved: MutableMapping[tuple[str, str], Any] | None = None, project: Any = FIND,
              given: Mapping[str, Any] | None = None, given_source: str | None = None) -> RunJudge:
    """The judge of run ``run_id`` for a command run in folder ``here`` (see the module's
    docstring). ``decision``: (gate step, outcome) of a gate decision, which needs no judge when
    it cannot reach a judged ensure here (:func:`may_judge`), nor when the run has ended (the
    engine refuses it); ``rehydrate``: the command only reloads the run and runs again the
    evaluate commands left running (``Engine.resume``), which needs no judge when there are
    none; ``reverting``: a revert, which may reach only the judged ensures of steps the engine
    settles itself (:func:`settles_judged`). ``resolved`` caches adapters by (configuration file, name), for a
    process that asks again (the MCP server). ``given``: the agents the command was given by
    name (its ``--agents`` module, recorded as ``given_source``), where a judge that was a
    Python function of the run's module is found: one named with ``--judge``, or lockgate.toml's
    ``judge`` when the run took that name from its module. A run that cannot be read gets the
    project's judge: the command's own call then says what is wrong with it."""
    from .flowneeds import uses_judged

    try:
        spec, flow = engine.spec_of(run_id)
        if not uses_judged(spec, flow) or not _reaches_judged(engine, run_id, spec, flow, decision, rehydrate,
                                                             reverting):
            return RunJudge(needed=False)
        name, agents, before = judge_of(engine, run_id, here)
    except LockgateError:
        name = agents = before = None
    if name is None:
        return _project(here) if project is FIND else RunJudge(judge=project)
    return _recorded(run_id, name, agents, before, here, resolved, (given, given_source))


def judge_of(engine: Any, run_id: str, here: Path) -> tuple[str | None, str | None, str | None]:
    """(the name of run ``run_id``'s judge, the agents and the configuration file its last drive
    recorded), for a command run in folder ``here``: the name that drive was given (``--judge``,
    ``judge=`` by name), else lockgate.toml's ``judge`` when the run took that name from the
    Python functions it was given (:func:`module_judge`); None for neither (the project's judge
    judges it) or a flow that judges nothing."""
    from .runner import recorded_judge

    agents = engine.last_agents(run_id) if hasattr(engine, "last_agents") else None
    before = engine.last_config(run_id) if hasattr(engine, "last_config") else None
    return recorded_judge(engine, run_id) or module_judge(agents, before, here), agents, before


def python_judge(name: str | None, agents: str | None) -> PythonAgents | None:
    """The Python functions a drive was given (its claim's ``agents`` record, parsed) when the
    judge ``name`` is one of them, which only a process given them again has; else None."""
    from .agentorigin import PythonAgents

    origin = PythonAgents.parse(agents)
    return origin if origin is not None and name is not None and name in origin.names else None


def judging_module(engine: Any, run_id: str, here: Path) -> str | None:
    """The ``--agents`` module (as the run's claim records it: a resolved path, or a dotted
    name) one of whose functions judges run ``run_id`` (:func:`judge_of`, :func:`python_judge`):
    the module a gate decision or a revert of it is to be given. None when its flow judges
    nothing, or its judge is none of a module's functions (a configured agent, a notebook's)."""
    from .flowneeds import uses_judged

    if not uses_judged(*engine.spec_of(run_id)):
        return None
    origin = python_judge(*judge_of(engine, run_id, here)[:2])
    return origin.module if origin is not None else None


def module_judge(agents: str | None, config: str | None, here: Path) -> str | None:
    """The ``judge`` of the run's lockgate.toml (``config``, the file its drive recorded: ``""``
    for none; when not recorded or gone, the one nearest from ``here``) when the run, recorded
    with agents ``agents``, took that name from the Python functions it was given (they come
    before lockgate.toml's agents): that function judged it, and only a process given it again
    can."""
    from .agentorigin import PythonAgents
    from .agents.config import load_config

    origin = PythonAgents.parse(agents)
    if origin is None or config == "":
        return None
    try:
        found = load_config(config) if config and os.path.exists(config) else load_config(start=here)
    except ConfigError:
        return None
    return found.judge if found.judge in origin.names else None


#: the statuses of a run that takes no more gate decisions
_ENDED = frozenset({"complete", "error", "killed", "cancelled"})
#: the kinds of step the engine settles itself, in the process that moves the run on
_SETTLED = ("set", "evaluate", "run", "fanout")


def _reaches_judged(engine: Any, run_id: str, spec: Any, flow: str | None, decision: tuple[str, str] | None,
                    rehydrate: bool, reverting: bool) -> bool:
    """Whether the command asked about may reach a judged ensure in this process (see
    :func:`run_judge`); any other command (a step's result) may."""
    if decision is not None:
        return (engine.status(run_id).get("status") not in _ENDED
                and may_judge(spec, flow, *decision, routed=engine.routed(run_id)))
    if rehydrate:
        return bool(engine.status(run_id).get("evaluating"))
    if reverting:
        return settles_judged(spec, flow)
    return True


def settles_judged(spec: Any, flow: str | None) -> bool:
    """Whether a step of ``flow`` that the engine settles itself has a judged ensure (an agent's
    step is judged where its agent answers: the process that resumes the run)."""
    own = spec.flow(flow)
    return own is None or any(step.kind in _SETTLED and _judges(spec, step) for step in own.steps)


def may_judge(spec: Any, flow: str | None, step_id: str, outcome: str,
              routed: Mapping[str, str] | None = None) -> bool:
    """Whether deciding ``outcome`` at gate ``step_id`` may reach a judged ensure in the process
    deciding it: a step its route (and, approved, the gate's dependents) starts that the engine
    settles itself (``set``, ``evaluate``, a subflow, a fanout) and judges, or whose dependents
    do in turn. An agent's step (``do``) is judged when its agent answers (where the run is
    resumed), but may fail at once here and start its ``on_fail`` target; a gate waits, unless
    either may be skipped here: by its ``when``, or as a route's
    target no route takes; a step skipped so releases its dependents and what it routes to at
    once (semantics §6.6; a gate its ``when`` skipped, both its routes). The route this
    decision does not take is skipped with its whole branch instead (:func:`untaken_branch`): it
    releases nothing. A revise also runs again at once the route targets in its region whose
    route, taken from outside it, it keeps (:func:`_kept_routes`; ``routed``: the run's steps a
    route started, each with its router, as :meth:`Engine.routed` gives them; without it, every
    route into the region from outside counts as taken). A route to nothing with no
    dependents ends the run. A gate of a subflow
    (whose end goes back to its caller) may; a step that is no gate of the flow takes no
    decision (the engine refuses it)."""
    own = spec.flow(flow)
    if own is None or "/" in step_id:
        return True
    gate = own.step(step_id)
    if gate is None or gate.gate is None:
        return False
    from .compiled import CFlow

    cflow = CFlow(spec, own)
    route = gate.gate.routes().get({"reject": "kill"}.get(outcome, outcome))
    # an approve, and a kill with a target, leave the gate succeeded: its dependents are released (§6.7)
    released = outcome == "approve" or (outcome != "revise" and route is not None)
    # an approve's or a kill's target is routed to, and so started; a revise's is reset with its
    # region and, routed to by nothing, may be skipped at once like any route target
    started = route if outcome != "revise" else None
    skipped = untaken_branch(cflow, step_id, route) if released else frozenset()
    # (step, whether it may run: False for one only skipped here, a route of a step skipped)
    todo = ([(route, True)] if route else []) + ([(sid, True) for sid in cflow.steps[step_id].dependents]
                                                 if released else [])
    if outcome == "revise" and route:
        todo += [(sid, True) for sid in _kept_routes(cflow, route, routed)]
    seen: set[tuple[str, bool]] = set()
    while todo:
        sid, runs = todo.pop()
        step = own.step(sid)
        if step is None:
            return True
        if (sid, runs) in seen or sid in skipped:
            continue
        seen.add((sid, runs))
        cstep = cflow.steps[sid]
        if runs and step.kind not in ("do", "gate"):
            if _judges(spec, step):
                return True
            todo += [(after, True) for after in (*cstep.dependents, *_routes(step))]
            continue
        if runs and step.kind == "do" and step.on_fail:
            # an agent's step may fail here, before any agent answers (its task fails to render, its
            # budget is spent): its on_fail target starts in this process
            todo.append((step.on_fail, True))
        if not runs or step.when is not None or (cstep.routed_only and sid != started):
            # skipped, or may be: its dependents are released, what it routes to is skipped in turn
            todo += [*((after, True) for after in cstep.dependents), *((target, False) for target in _routes(step))]
    return False


def _kept_routes(cflow: Any, target: str, routed: Mapping[str, str] | None) -> list[str]:
    """The route targets in the region a revise to ``target`` resets whose route, taken from a
    step outside it, the revise keeps (:func:`~lockgate.engine.gates.reset_region`) and that
    wait on nothing it resets, so they run again at once in the process deciding it (one that
    waits on a step of the region runs when that step settles: the walk from it reaches it).
    ``routed`` (target -> router) says which routes were taken; None: any route from outside
    may have been."""
    region = set(cflow.reset_closure(target))

    def kept(sid: str) -> bool:
        cstep = cflow.steps[sid]
        if sid == target or region.intersection(cstep.deps):
            return False
        if routed is not None:
            return sid in routed and routed[sid] not in region
        return any(router not in region for router in (*cstep.fail_routers, *cstep.gate_routers))

    return [sid for sid in region if kept(sid)]


def _routes(step: Any) -> list[str]:
    """The steps ``step`` routes to: its ``on_fail``, a gate's approve and kill targets."""
    return [target for target in (step.on_fail, *((step.gate.on_approve, step.gate.on_kill) if step.gate else ()))
            if target]


def untaken_branch(cflow: Any, gate_id: str, route: str | None) -> frozenset[str]:
    """The steps a decision of gate ``gate_id`` taking ``route`` (None: the gate's own
    dependents) skips as the branch not taken, as the engine skips them (see
    :func:`lockgate.engine.advance.untaken_by`): its other route's target when nothing else
    routes to it, then every step that waits on one of these and not also on the branch taken,
    and every step only they route to."""
    gate = cflow.steps[gate_id].step.gate
    taken = {route or gate_id}
    branch = {target for target in (gate.on_approve, gate.on_kill) if target and target != route
              and [*cflow.steps[target].fail_routers, *cflow.steps[target].gate_routers] == [gate_id]}
    todo = list(branch)
    while todo:
        cstep = cflow.steps[todo.pop()]
        for sid in [*cstep.dependents, *_routes(cstep.step)]:
            if sid not in branch and _cut(cflow, cflow.steps[sid], branch, taken):
                branch.add(sid)
                todo.append(sid)
    return frozenset(branch)


def _cut(cflow: Any, cstep: Any, branch: set[str], taken: set[str]) -> bool:
    """Whether ``cstep``, after or routed to from a step of ``branch``, is skipped with it: a route
    target only that branch routes to, or a step that waits on none of the branch ``taken``."""
    if cstep.routed_only:
        return all(router in branch for router in (*cstep.fail_routers, *cstep.gate_routers))
    return not any(cflow.upstream(dep) & taken for dep in cstep.deps if dep not in branch)


def _judges(spec: Any, step: Any) -> bool:
    """Whether a step the engine settles itself has a judged ensure (its subflow's, its stages')."""
    from .flowneeds import uses_judged

    if step.kind not in ("set", "evaluate", "run", "fanout"):
        return True
    stages = step.fanout.stages if step.fanout else ()
    ensures = [*step.ensure, *(ensure for stage in stages for ensure in stage.ensure)]
    return any(e.kind == "judged" for e in ensures) or (step.run is not None and uses_judged(spec, step.run))


def _project(here: Path) -> RunJudge:
    from .judge import project_judge

    judge, problem = project_judge(here)
    return RunJudge(judge=judge, problem=problem)


def _recorded(run_id: str, name: str, agents: str | None, before: str | None, here: Path,
              resolved: MutableMapping[tuple[str, str], Any] | None,
              offered: tuple[Mapping[str, Any] | None, str | None]) -> RunJudge:
    """The recorded judge ``name`` resolved here, or the refusal saying why it cannot be
    (``offered``: the agents the command was given, and the module they came from)."""
    from .agentorigin import module_of
    from .agents.config import load_config
    from .agents.registry import DEFAULT_REGISTRY, known_agents, resolve_agent
    from .judge import AgentJudge

    origin = python_judge(name, agents)
    if origin is not None:
        given, source = offered
        other = _other_module(origin.module, source) if given is not None else None
        if given is not None and other is None and (name in given or name in DEFAULT_REGISTRY.names()):
            return RunJudge(judge=AgentJudge(resolve_agent(name, explicit=given), name), name=name)  # or registered
        return RunJudge(name=name, refusal=_refusal(PYTHON_JUDGE, run_id, name, module=origin.module,
                                                    variable=origin.variable, given=given is not None, other=other))
    # every refusal names the run's --agents module: a resume without it is refused in turn
    module = module_of(agents)
    try:
        config = load_config(start=here)
    except ConfigError as exc:
        return RunJudge(name=name, refusal=_refusal(NO_SUCH_JUDGE, run_id, name, why=str(exc), module=module))
    found = config_file(config)
    if config_moved(before, found) and name not in DEFAULT_REGISTRY.names():
        return RunJudge(name=name, refusal=_refusal(OTHER_CONFIG, run_id, name, config=before, found=found,
                                                    module=module))
    key = (found, name)
    if resolved is None or key not in resolved:
        try:
            judge = AgentJudge(resolve_agent(name, config=config), name)
        except ConfigError:
            return RunJudge(name=name, refusal=_refusal(NO_SUCH_JUDGE, run_id, name,
                                                        agents=known_agents(config=config), module=module))
        if resolved is None:
            return RunJudge(judge=judge, name=name)
        resolved[key] = judge
    return RunJudge(judge=resolved[key], name=name)


def _other_module(recorded: str | None, given: str | None) -> str | None:
    """``given``, the module a command was given, when it is not the module ``recorded`` the run
    was driven with (a file still there: one that is gone may have moved); else None."""
    if recorded is None or given is None or given == recorded:
        return None
    if os.path.isabs(recorded) and not os.path.exists(recorded):
        return None
    return None if _module_file(given) == _module_file(recorded) else given


def _module_file(source: str) -> str:
    """The file of an ``--agents`` module as a claim records it (a resolved path, or a dotted
    name, found as ``--agents`` finds it), so that both spellings of one module compare equal."""
    import importlib.util
    import sys

    if os.path.isabs(source):
        return source
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # where --agents looks for a dotted name
    try:
        found = importlib.util.find_spec(source)
    except (ImportError, ValueError):
        return source
    return str(Path(found.origin).resolve()) if found is not None and found.origin else source


def config_file(config: Any) -> str:
    """A loaded configuration's file, resolved, as a claim records it; ``""`` for none."""
    return str(Path(config.path).resolve()) if config.path else ""


def config_moved(before: str | None, here: str) -> bool:
    """Whether agents resolved through configuration file ``here`` may differ from those of a
    run that recorded ``before`` (None: not recorded; ``""``: driven with none): another file
    than its own, unless its own is gone (the run's project moved)."""
    return before is not None and before != here and not (before and not os.path.exists(before))


def resume_command(run_id: str, detail: dict[str, Any], *, store: str | None = None) -> str:
    """The ``lockgate run --resume`` command that continues run ``run_id`` with its recorded
    judge, from a refusal's ``detail``: the run's ``--agents`` module and the configuration file
    its judge was resolved through, when known (``FILE.py`` stands for a module not recorded
    that gave the judge)."""
    words = ["lockgate", "run", "--resume", run_id]
    if detail.get("problem") == OTHER_CONFIG and detail.get("config"):
        words += ["--config", detail["config"]]
    if detail.get("module") or detail.get("problem") == PYTHON_JUDGE:
        words += ["--agents", detail.get("module") or "FILE.py"]
    words += ["--judge", detail["judge"]] + (["--store", store] if store else [])
    return " ".join(word if word == "FILE.py" else shlex.quote(word) for word in words)


def _refusal(problem: str, run_id: str, name: str, **facts: Any) -> ConfigError:
    """The ConfigError refusing to move run ``run_id`` on without its judge ``name``: the why,
    in words for any surface (each says its own remedy; ``detail`` holds the facts)."""
    error = ConfigError(f"run {run_id} was driven with the judge {name!r}, {_why(problem, name, facts)}: "
                        "without it the run's judged ensures fail closed")
    error.detail = {"problem": problem, "run_id": run_id, "judge": name, **facts}
    return error


def _why(problem: str, name: str, facts: dict[str, Any]) -> str:
    if problem == PYTHON_JUDGE:
        source = (f"the --agents module {facts['module']}" if facts.get("module") else
                  f"the notebook variable {facts['variable']}" if facts.get("variable") else "the agents= mapping")
        have = (f"and the --agents module given here is another one ({facts['other']})" if facts.get("other")
                else f"and the --agents module given here has no agent named {name!r}" if facts.get("given")
                else "which this process does not have")
        return f"a Python function of {source} that drive was given, {have}"
    if problem == OTHER_CONFIG:
        return (f"resolved through {facts.get('config') or 'no configuration file'}, but here "
                f"{facts.get('found') or 'no configuration file'} is found, where {name!r} could be another adapter")
    if facts.get("why"):
        return f"and the configuration here cannot give it ({facts['why']})"
    return f"and no agent named {name!r} is here (the agents are: {', '.join(facts.get('agents') or ())})"
