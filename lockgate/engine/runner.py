"""The runner: drives the consumer protocol with agents, on asyncio.

``await run(spec, inputs, agents=..., gates=...)`` plans a run, executes every ready ``do`` step
and fanout item through its agent concurrently, reports each result with ``step_done`` (a retry
gets the previous violations in its Task), asks a :class:`~lockgate.engine.gatechannel.GateChannel`
for gate decisions, and returns when the run is complete, failed, killed or cancelled, or when it
only waits at gates nobody answered (status ``await_gate``).

Limits: at most ``max_running`` agent calls run at once (default 10); at most
``max_outstanding`` may be running or queued (default 100): beyond it a clear
:class:`~lockgate.errors.RunnerError` instead of queueing without bound, losing nothing. A run
whose first steps alone pass it (a fanout over an input wider than the limit) is refused before it
is planned; one that reaches it later starts no more calls, lets those in flight end and report,
and is left resumable: raise the limit, then resume it (see :mod:`.admission`). Both limits are
positive integers (a RunnerError before anything is stored). Fanout ``concurrency`` is enforced by
the engine, which issues no more items than that at once.

Cancelling the task running :func:`run` cancels every agent call (their processes are killed),
records the run as cancelled and re-raises. A run cancelled by another process (``lockgate
cancel``) is noticed within a second: its calls are stopped the same way and :func:`run` returns
with status ``cancelled``. An agent call or command whose issuance another process withdrew
(``lockgate revert``, a decision resetting its step) is stopped the same way, and the run goes on:
whether it runs, waits for a slot (it never starts) or waits for the judge's verdict on its answer.

``judged`` ensures are answered by the judge: ``judge=`` (an agent name, an agent or a callable
``judge(statement, stakes, result, input)``), else the engine's own ``judge``, else (a resume)
the agent the run's last drive was given by name as its judge (recorded with its claim), else
``judge`` in lockgate.toml. A judge is asked on the runner's loop while other agents keep running (see
:func:`lockgate.engine.judge.settle`); it counts as a running agent call.

``evaluate`` steps run their command through ``evaluator=`` (default: the engine's own, by
default :func:`lockgate.engine.evaluate.run_command`). The runner's engine calls leave the
commands to the runner (:func:`lockgate.engine.evaluate.deferred`), which awaits each on its loop
like an agent call once the transition that started it has committed (within the same limits),
so other agent calls, runs, gate questions and progress go on while it runs, and cancelling the
run kills it.

This module owns what lasts across runs (the :class:`Runner`: its agents, its judge, engine
transitions on the loop) and the public functions. One run in flight is :mod:`.drive`, its limits
:mod:`.admission`, what a dispatch becomes :mod:`.dispatches`, and what a flow needs before it
starts :mod:`.flowneeds`; their names stay importable from here.
"""

from __future__ import annotations

import asyncio
import os
import shlex
from collections import Counter
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import ConfigError, RunnerError
from .admission import Admission, check_start
from .agentorigin import missing_agents, module_of, names_of, record_of
from .agentorigin import refusal as agents_refusal
from .agents import Agent, preflight
from .agents.base import cancels_by_run
from .agents.config import ProjectConfig, RunnerSettings, load_config
from .agents.registry import DEFAULT_REGISTRY, AgentLike, AgentRegistry, known_agents, resolve_agent
from .dispatches import DISPATCH_STATUSES  # noqa: F401  (re-exported, as before the split)
from .dispatches import revision_note as _revision_note  # noqa: F401
from .dispatches import stage_data as _stage_data  # noqa: F401
from .dispatches import usage_of as _usage  # noqa: F401
from .drive import _WAKE, CONFLICT_RETRIES, TERMINAL, Drive, RunResult  # noqa: F401
from .drive import retry_conflicts as _retry_conflicts  # noqa: F401
from .drivers import Driver, await_stopped, ended, give_up, refusal
from .engine import check_inputs
from .evaluate import Evaluator, deferred
from .flowneeds import agent_names, as_spec, isolated_agent_names, uses_judged
from .flowneeds import flow_steps as _flow_steps  # noqa: F401
from .gatechannel import GateChannel
from .judge import (
    AgentJudge,
    JudgeBridge,
    JudgeLike,
    Question,
    as_judge,
    ask_judge,
    settle,
)
from .progress import Observer
from .runjudge import config_moved

_Drive = Drive  # the names these had here before the split
_as_spec = as_spec
#: ``evaluator=`` not given: the engine's own evaluator is used
ENGINE_EVALUATOR: Any = object()


class Runner:
    """Drives one engine with agents and a gate channel; one Runner can drive many runs."""

    def __init__(self, engine: Any, *, agents: Mapping[str, AgentLike] | None = None,
                 registry: AgentRegistry | None = None, config: ProjectConfig | None = None,
                 gates: GateChannel | None = None, on_event: Observer | None = None,
                 settings: RunnerSettings | None = None, workspace: str | os.PathLike | None = None,
                 judge: JudgeLike | None = None, evaluator: Evaluator | None = ENGINE_EVALUATOR,
                 config_chosen: bool | None = None, agents_module: str | None = None) -> None:
        """``evaluator`` runs ``evaluate`` steps' commands: not given, the engine's own; given
        (None: none, evaluate steps then fail), it replaces the engine's when a run starts.
        ``config_chosen``: the caller chose ``config`` on purpose (default: when it is given), so
        a resume may use it although the run was driven with another configuration file.
        ``agents_module``: where ``agents`` came from (``lockgate run --agents``), recorded with
        the runner's claims with their names, so that commands that print how to resume a run
        can name it; or a ready record (:class:`~.agentorigin.PythonAgents`: a notebook's, or a
        module's with the names it also registered); not given, ``agents`` are recorded as given
        in Python, by their names (``agents=`` of the library). A resume of the run given none
        for a recorded name its flow uses is then refused (see :mod:`.agentorigin`)."""
        self.engine = engine
        self.config = config if config is not None else load_config(start=workspace)
        self.config_chosen = config is not None if config_chosen is None else config_chosen
        self.settings = settings or self.config.runner
        self.gates = gates
        self.workspace = str(workspace) if workspace is not None else None
        self._explicit = dict(agents or {})
        self._agents_module = record_of(agents, agents_module)
        #: the agent names this runner was given (a module's registered ones too): a resume
        #: gives those again
        self._given = set(self._explicit) | set(names_of(self._agents_module))
        self._registry = registry
        self._agents: dict[str, Agent] = {}
        self.on_event = on_event
        self._judge_choice = judge
        self._bridge: JudgeBridge | None = None
        self._judge_ready = False
        self._evaluator_choice = evaluator
        self._evaluator_ready = False
        self._in_flight: dict[int, Counter[str]] = {}  # id(agent) -> its calls in flight by run
        #: the runs this runner has planned or resumed, in that order
        self.run_ids: list[str] = []
        self.detached = False
        #: the judge a resume took from the run's record, given none (see check_resumable)
        self.recorded_judge: str | None = None

    def detach(self) -> None:
        """From now on, a run whose driving is cancelled (Ctrl-C) is left as it is, resumable,
        instead of recorded cancelled: its agent calls are still stopped. ``Engine.cancel``
        remains the way to end a run for good."""
        self.detached = True

    def agent(self, name: str) -> Agent:
        """The adapter for ``name`` (resolved once per runner, by precedence)."""
        if name not in self._agents:
            self._agents[name] = resolve_agent(name, explicit=self._explicit,
                                               registry=self._registry, config=self.config)
        return self._agents[name]

    async def preflight(self, names: list[str]) -> None:
        """Resolve and preflight every agent a run may use, before it starts."""
        for name in names:
            await preflight(self.agent(name))

    async def start(self, spec: Any, inputs: Mapping[str, Any] | None = None, *,
                    flow: str | None = None) -> RunResult:
        spec = as_spec(spec)
        check_inputs(spec, inputs, flow)  # the inputs first: a mistake there is the cheaper one to fix
        if getattr(self.engine, "dispatcher", None) is None:  # one runs fanout items itself, past admission
            check_start(spec, flow, inputs, self.settings, self.config.path)
        await self._ready_for(spec, flow)
        driver = self._new_driver()  # claimed as the run is planned (see drivers)
        claim = {"driver": driver} if driver is not None else {}
        try:
            response = await self.transition(lambda: self.engine.plan(spec, dict(inputs or {}), flow=flow, **claim))
        except BaseException:
            if driver is not None:
                ended(driver)
            raise
        return await Drive(self, response, driver).drive()

    async def resume(self, run_id: str, *, take_over: bool = False) -> RunResult:
        """Continue a run from its durable state (after a crash, or after a gate decision); the
        agents of a run still going are checked first, as at a start, so one that cannot run
        here leaves the run as it was (a finished run needs none: its status is reported).

        A run another live process drives is refused (:class:`~lockgate.errors.RunDriven`,
        nothing changed): both would call the same agents. ``take_over`` drives it anyway, for
        a process that is gone for good where this one cannot tell (another host); that process
        stops its calls when it next renews its claim (see :mod:`lockgate.engine.drivers`)."""
        spec, flow = self.engine.spec_of(run_id)
        going = self.engine.status(run_id).get("status") not in TERMINAL
        if going:
            self.check_resumable(run_id, take_over=take_over)
            await self._ready_for(spec, flow)
        else:
            self.install_evaluator()
            self.install_judge()
        if going and hasattr(self.engine, "claim_of"):  # off the loop: a notebook's stays responsive
            left = self.engine.claim_of(run_id)
            await asyncio.to_thread(await_stopped, left.to_dict() if left is not None else None)
        driver = self._claim(run_id, take_over=take_over) if going else None  # an ended run: nothing to drive
        try:
            response = await self.transition(lambda: self.engine.resume(run_id), run_id=run_id)
        except BaseException:
            if driver is not None:  # nobody drives it after all
                give_up(self.engine, run_id, driver)
            raise
        return await Drive(self, response, driver).drive()

    def check_resumable(self, run_id: str, *, take_over: bool = False) -> None:
        """Refuse now, changing nothing, what :meth:`resume` would refuse: a run another live
        process drives (RunDriven; not with ``take_over``) or one whose agents this runner would
        resolve from another configuration file, or from anywhere but the Python functions (or
        the ``--agents`` module's) the run was driven with, or, given no judge, one whose judge
        recorded by name (``--judge``) names no agent here (ConfigError; else it is taken). Another process
        driving the run is refused first: other agents or configuration would not change that.
        For callers that start the resume later (a notebook cell's task) and must say so in the
        cell."""
        holder = None if take_over or not hasattr(self.engine, "driver_of") else self.engine.driver_of(run_id)
        if holder is not None:
            running = (self.engine.status(run_id).get("evaluating") or ()) if holder.commands_only else ()
            raise refusal(run_id, holder, [str(call["step_id"]) for call in running])
        taken = self._take_recorded_judge(run_id)
        try:
            self._check_config(run_id)
            self._check_agents(run_id)
            if taken is not None and taken not in self.known_agents():
                raise judge_refusal(run_id, taken, self.known_agents())
        except BaseException:
            if taken is not None:  # refused: the runner is left as it was
                self._judge_choice = self.recorded_judge = None
            raise

    def _take_recorded_judge(self, run_id: str) -> str | None:
        """Given no judge (none to this runner, none of its engine's), take the one the run's
        last drive was given by name (``--judge``, ``judge=``), as its claim records it, when
        its flow has judged ensures, and return its name: they would otherwise fail closed, or
        be answered by lockgate.toml's judge. The runner then judges with it, as if given ``judge=`` that
        name (:attr:`recorded_judge` says so); None when it takes none."""
        if self._judge_choice is not None or getattr(self.engine, "judge", None) is not None:
            return None
        name = recorded_judge(self.engine, run_id)
        if name is not None:
            self._judge_choice, self._judge_ready, self.recorded_judge = name, False, name
        return name

    def known_agents(self) -> list[str]:
        """The agent names this runner resolves (given, registered, configured, built in)."""
        return known_agents(explicit=self._explicit, registry=self._registry, config=self.config)

    def _check_config(self, run_id: str) -> None:
        """Refuse (ConfigError) to resume with agents resolved from another configuration file
        than the one the run's last drive used, unless the caller chose this one: a resume from
        another folder would otherwise quietly give the run's agent names other adapters."""
        before = self.engine.last_config(run_id) if hasattr(self.engine, "last_config") else None
        here = self._config_file()
        if self.config_chosen or not config_moved(before, here) or not self._config_resolves(run_id):
            return
        if not before:
            raise ConfigError(
                f"run {run_id} was driven without a configuration file, but this resume found {here}: its "
                "agents could resolve to other adapters. Resume from a folder where no lockgate.toml is "
                f"found, or choose this one on purpose (`--config {here}`, or config= in Python)")
        raise ConfigError(
            f"run {run_id} was driven with the configuration {before}, but this resume found "
            f"{here or 'no configuration file'}: its agents could resolve to other adapters. Resume with "
            f"that configuration (`--config {before}`, or config=load_config({before!r}) in Python), or "
            "choose one on purpose the same way")

    def _check_agents(self, run_id: str) -> None:
        """Refuse (ConfigError) to resume a run driven with agents given in Python (a notebook's
        or a script's functions) or taken from an ``--agents`` module without them (those its
        flow uses, by the names its claim recorded): they would quietly resolve to other
        adapters."""
        judge = self._judge_choice if isinstance(self._judge_choice, str) else None
        missing = missing_agents(self.engine, run_id, self._given, judge)
        if missing is not None:
            raise agents_refusal(run_id, *missing, given_module=module_of(self._agents_module))

    def _config_resolves(self, run_id: str) -> bool:
        """Whether a configuration file can change the run's agents here: some agent of its flow
        is not given in ``agents=`` nor registered, or its judged ensures take the judge from
        the configuration (none given to this runner or its engine), or from an agent name
        (given, or the one the run recorded) that the configuration may define."""
        spec, flow = self.engine.spec_of(run_id)
        given = set(self._explicit) | set((self._registry or DEFAULT_REGISTRY).names())
        if not set(agent_names(spec, flow)) <= given:
            return True
        if not uses_judged(spec, flow):
            return False
        if isinstance(self._judge_choice, str):
            return self._judge_choice not in given
        return self._judge_choice is None and getattr(self.engine, "judge", None) is None

    def resume_hint(self, run_id: str) -> str:
        """How to continue run ``run_id`` once its drive stopped: ``lockgate run --resume`` with
        what this runner was given that a resume must repeat (the ``--agents`` module, a judge
        by name, a configuration file chosen), or, for agents given in Python, ``resume``."""
        module = module_of(self._agents_module)
        if _in_memory(getattr(self.engine, "store", None)):
            return (f"lockgate.resume({run_id!r}, engine=..., max_outstanding=...) in this process, on the same "
                    "engine, with the same agents (its store keeps runs in memory only)")
        if module is None and names_of(self._agents_module):
            return f"lockgate.resume({run_id!r}, agents=..., max_outstanding=...) with the same agents"
        words = ["lockgate", "run", "--resume", run_id]
        if module is not None:
            words += ["--agents", module]
        if isinstance(self._judge_choice, str):
            words += ["--judge", self._judge_choice]
        if self.config_chosen and self.config.path:
            words += ["--config", str(self.config.path)]
        return shlex.join(words)

    def _config_file(self) -> str:
        """The configuration file this runner resolves agents with, resolved; ``""`` for none."""
        return str(Path(self.config.path).resolve()) if self.config.path else ""

    def _claim(self, run_id: str, *, take_over: bool = False) -> Driver | None:
        """Claim run ``run_id`` for a drive by this process (RunDriven when another live process
        drives it); None for an engine that keeps no claims."""
        driver = self._new_driver()
        if driver is not None:
            try:
                self.engine.claim(run_id, driver, take_over=take_over)
            except BaseException:
                ended(driver)
                raise
        return driver

    def _new_driver(self) -> Driver | None:
        """A new drive by this process, for an engine that keeps claims (None for another)."""
        if not hasattr(self.engine, "claim"):
            return None
        judge = self._judge_choice if isinstance(self._judge_choice, str) else None
        return Driver.here(self._config_file(), self._agents_module, judge=judge)

    async def _ready_for(self, spec: Any, flow: str | None) -> None:
        """Install the evaluator and the judge, and preflight every agent the flow may dispatch
        to (the judge's too, when a judged ensure may be reached), and check that the agents of
        items isolated in worktrees can run there: AgentUnavailable before anything starts."""
        self.install_evaluator()
        for agent in self.agents_to_check(spec, flow):
            await preflight(agent)
        workspace = getattr(self.engine, "workspace", None)
        for name in isolated_agent_names(spec, flow) if workspace is not None else ():
            check = getattr(self.agent(name), "check_placeable", None)
            if check is not None:
                await asyncio.to_thread(check, str(workspace))

    def agents_to_check(self, spec: Any, flow: str | None) -> list[Agent]:
        """Every agent the flow may dispatch to, resolved, and the judge's agent when a judged
        ensure may be reached: what a start (or a resume) preflights first."""
        agents = [self.agent(name) for name in agent_names(spec, flow)]
        bridge = self.install_judge()
        if bridge is not None and isinstance(bridge.judge, AgentJudge) and uses_judged(spec, flow):
            agents.append(bridge.judge.agent)
        return agents

    # --- the judge ---------------------------------------------------------------------------------

    def install_judge(self) -> JudgeBridge | None:
        """Resolve the judge once and install it on the engine behind a :class:`JudgeBridge`.

        Precedence: ``judge=`` given to this runner (or, on a resume given none, the name the
        run's claim recorded: see :meth:`check_resumable`), then the engine's own ``judge``, then
        ``judge`` in the project configuration. None when there is none (judged ensures then
        fail closed). An unknown agent name is a ConfigError listing the agents there are.
        """
        if self._judge_ready:
            return self._bridge
        judge: Any = None
        if self._judge_choice is not None:
            judge = as_judge(self._judge_choice, lambda name: self._judge_agent(name, ""))
        elif getattr(self.engine, "judge", None) is not None:
            judge = self.engine.judge
        elif self.config.judge is not None:
            where = f"{self.config.path}: judge: " if self.config.path else "judge: "
            judge = as_judge(self.config.judge, lambda name: self._judge_agent(name, where))
        if judge is not None:
            self._bridge = judge if isinstance(judge, JudgeBridge) else JudgeBridge(judge)
            self.engine.judge = self._bridge
        self._judge_ready = True
        return self._bridge

    def install_evaluator(self) -> None:
        """Install ``evaluator=`` given to this runner (None included) on the engine, once; not
        given, the engine keeps its own."""
        if not self._evaluator_ready and self._evaluator_choice is not ENGINE_EVALUATOR:
            self.engine.evaluator = self._evaluator_choice
        self._evaluator_ready = True

    def _judge_agent(self, name: str, where: str) -> Agent:
        names = self.known_agents()
        if name not in names:
            raise ConfigError(
                f"{where}no agent named {name!r} to be the judge; the agents are: "
                f"{', '.join(names)} (add [agents.{name}] to the project configuration, register "
                f"a Python callable, or pass it in agents=)")
        return self.agent(name)

    async def transition(self, call: Callable[[], Any], *, run_id: str = "",
                         step_id: str | None = None, cwd: str | None = None,
                         admission: Admission | None = None) -> Any:
        """Run the engine ``call`` on this loop; judged ensures it reaches are asked of the judge
        without blocking the loop (see :func:`settle`), and the evaluate commands it starts are
        left to the drive (listed in the response's ``evaluate`` entries)."""
        bridge = self._bridge
        deferring = partial(_deferring, call)
        # an engine with a dispatcher settles more transactions after the first is saved, so
        # abandoning one for an answer is not safe: it asks blocking, as without a runner
        if bridge is None or getattr(self.engine, "dispatcher", None) is not None:
            return deferring()

        async def ask(question: Question) -> Any:
            # asked as the step being judged, in its directory (not the one whose result this is)
            where = question.cwd or cwd or self.workspace or os.getcwd()
            about = {"run_id": run_id, "step_id": question.step_id or step_id, "cwd": where}
            judge = bridge.judge
            with self.calling(judge.agent if isinstance(judge, AgentJudge) else None, run_id):
                if admission is None:
                    return await ask_judge(judge, question, **about)
                async with admission:
                    return await ask_judge(judge, question, **about)

        return await settle(deferring, ask)

    # --- stopping a run's calls --------------------------------------------------------------------

    def calling(self, agent: Any, run_id: str) -> AbstractContextManager[None]:
        """Count a call of ``agent`` (None: no agent) for run ``run_id`` while the block runs,
        so that another run stopping knows whose calls the agent has in flight."""
        if agent is None:
            return nullcontext()
        return _Calling(self._in_flight.setdefault(id(agent), Counter()), run_id)

    async def cancel_calls(self, run_id: str) -> None:
        """Stop run ``run_id``'s calls through ``cancel`` of every agent that may have some in
        flight (step agents and the judge's), leaving other runs' calls be (two runs driven at
        once, or an agent driving a nested run): an adapter taking ``cancel(run_id=...)`` is
        told the run; one with only ``cancel()``, which stops every call, is cancelled only
        while no other run has a call of it in flight (a call of this run it has then gets its
        task's cancellation only)."""
        await asyncio.gather(*(self._cancel_calls_of(agent, run_id) for agent in self._cancellable()),
                             return_exceptions=True)

    async def _cancel_calls_of(self, agent: Any, run_id: str) -> None:
        # checked as this cancel starts: a call another run starts meanwhile is then counted
        if cancels_by_run(agent):
            await agent.cancel(run_id=run_id)
        elif all(owner == run_id for owner in self._in_flight.get(id(agent), ())):
            await agent.cancel()

    def _cancellable(self) -> list[Any]:
        """Every agent with calls this runner may have in flight: step agents and the judge's."""
        agents: list[Any] = list(self._agents.values())
        judge = self._bridge.judge if self._bridge is not None else None
        if isinstance(judge, AgentJudge) and all(judge.agent is not a for a in agents):
            agents.append(judge.agent)
        return agents


# --- module API --------------------------------------------------------------------------------


async def run(spec: Any, inputs: Mapping[str, Any] | None = None, *, flow: str | None = None,
              agents: Mapping[str, AgentLike] | None = None, store: Any = None,
              gates: GateChannel | None = None, workspace: str | os.PathLike | None = None,
              on_event: Observer | None = None, engine: Any = None,
              registry: AgentRegistry | None = None, config: ProjectConfig | None = None,
              max_running: int | None = None, max_outstanding: int | None = None,
              judge: JudgeLike | None = None, evaluator: Evaluator | None = ENGINE_EVALUATOR) -> RunResult:
    """Run ``spec`` (a Spec, a LoadResult, a path or YAML text) to completion with agents.

    ``agents`` maps agent names to adapters or Python callables (highest precedence, then the
    registry, then lockgate.toml, then the built-ins); the run records their names, and a
    resume without them is refused (see :func:`resume`). ``store`` is a Store or a store URL
    (default: the SQLite store under ``.lockgate/``). ``workspace`` (default: the current
    directory) is where agents work and file predicates look. ``gates=None`` leaves gates waiting
    and returns with status ``await_gate``. ``judge`` answers ``judged`` ensures: an agent name
    (resolved like a step's agent), an agent, or a callable ``judge(statement, stakes, result,
    input) -> {holds, reason}``; default: the engine's judge, else ``judge`` in lockgate.toml.
    ``evaluator`` runs ``evaluate`` steps' commands: a callable ``evaluator(command, input,
    timeout_ms, workspace)`` (sync or async) answering the envelope described in
    :mod:`lockgate.engine.evaluate`, or None for none (evaluate steps then fail); default: the
    engine's (``/bin/sh -c`` in the workspace for an engine made here).
    """
    found = config_file_for(spec) if config is None and workspace is None else None
    runner = make_runner(engine=engine, store=store, workspace=workspace, agents=agents,
                         registry=registry, config=load_config(found) if found else config, gates=gates,
                         on_event=on_event, max_running=max_running, max_outstanding=max_outstanding, judge=judge,
                         evaluator=evaluator, config_chosen=False if found else None)
    return await runner.start(spec, inputs, flow=flow)


def config_file_for(spec: Any, here: Path | None = None) -> Path | None:
    """The project configuration file a run of ``spec`` resolves agents with when none is chosen:
    for a spec given as a file path, the nearest above its folder (a project's lockgate.toml
    beside its specs, found wherever the run starts from); else, or when there is none, ``here``
    (the one found from the current folder: searched when not given). ``lockgate run`` and
    :func:`run` alike."""
    from .agents.config import find_config

    path = _spec_path(spec)
    found = find_config(path.resolve().parent) if path is not None else None
    return found or (here if here is not None else find_config())


def _spec_path(spec: Any) -> Path | None:
    """``spec`` as a file path when it is one (as :func:`as_spec` reads it), else None."""
    if isinstance(spec, os.PathLike):
        return Path(spec)
    if isinstance(spec, str) and "\n" not in spec and spec.endswith((".yaml", ".yml")):
        return Path(spec)
    return None


def run_sync(spec: Any, inputs: Mapping[str, Any] | None = None, **options: Any) -> RunResult:
    """:func:`run` for code that has no event loop running (scripts, the CLI); same options,
    ``evaluator`` included."""
    return asyncio.run(run(spec, inputs, **options))


async def resume(run_id: str, *, take_over: bool = False, **options: Any) -> RunResult:
    """Continue an existing run with agents (same options as :func:`run`); ``take_over``: see
    :meth:`Runner.resume`. A run driven with ``agents=`` (or a notebook's, or an ``--agents``
    module's) is resumed only with agents of the same names its flow uses (else ConfigError):
    they would resolve to other adapters."""
    runner = make_runner(**options)
    return await runner.resume(run_id, take_over=take_over)


def make_runner(*, engine: Any = None, store: Any = None,
                workspace: str | os.PathLike | None = None, max_running: int | None = None,
                max_outstanding: int | None = None, config: ProjectConfig | None = None,
                **options: Any) -> Runner:
    """A Runner over ``engine`` (or a new Engine on ``store``) with limits applied; the other
    options (``agents``, ``registry``, ``gates``, ``on_event``, ``judge``, ``evaluator``) go to
    :class:`Runner`."""
    _check_limit("max_running", max_running)  # before anything is opened or stored
    _check_limit("max_outstanding", max_outstanding)
    options.setdefault("config_chosen", config is not None)  # found here: not chosen on purpose
    config = config if config is not None else load_config(start=workspace)
    base = config.runner
    settings = RunnerSettings(max_running=base.max_running if max_running is None else max_running,
                              max_outstanding=base.max_outstanding if max_outstanding is None else max_outstanding)
    if settings.max_outstanding < settings.max_running:
        raise RunnerError(f"max_outstanding ({settings.max_outstanding}) must be at least "
                          f"max_running ({settings.max_running})")
    if engine is None:
        engine = _engine(store, workspace)
    return Runner(engine, config=config, settings=settings, workspace=workspace, **options)


def _check_limit(name: str, value: Any) -> None:
    """A limit given in Python is None (lockgate.toml's ``[runner]``, else the default) or an
    integer >= 1: 0 or 2.5 would otherwise be taken as no limit, and -1 fail once the run is
    stored, with nobody driving it."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise RunnerError(f"{name}= must be an integer >= 1 (or None: [runner] {name} of lockgate.toml, "
                          f"else the default), got {value!r}")


def _in_memory(store: Any) -> bool:
    """Whether ``store`` keeps its runs only in this process (a memory store, SQLite's
    ``:memory:``): no command run later can resume them."""
    from .store import MemoryStore, SQLiteStore

    return isinstance(store, MemoryStore) or (isinstance(store, SQLiteStore) and str(store.path) == ":memory:")


def _engine(store: Any, workspace: Any) -> Any:
    from .engine import Engine
    from .store import open_store

    if store is None or isinstance(store, (str, os.PathLike)):
        store = open_store(store)
    return Engine(store=store, workspace=workspace if workspace is not None else Path.cwd())


def recorded_judge(engine: Any, run_id: str) -> str | None:
    """The agent name run ``run_id``'s last drive was given as its judge (``--judge``,
    ``judge=`` by name), as its claim records it, when its flow has judged ensures: a resume
    given no judge takes it, and the commands that print how to resume the run name it. None
    when none is recorded, or the flow judges nothing (a judge it never asks is no reason to
    refuse a resume, nor to name one)."""
    if not hasattr(engine, "last_judge"):
        return None
    name = engine.last_judge(run_id)
    return name if name is not None and uses_judged(*engine.spec_of(run_id)) else None


def judge_refusal(run_id: str, name: str, known: list[str]) -> ConfigError:
    """The error refusing a resume of run ``run_id``, given no judge, whose last drive judged
    with the agent ``name`` that resolves to none of ``known`` here (its ``detail`` holds the
    facts, for callers with other words for the remedy)."""
    error = ConfigError(
        f"run {run_id} was driven with the judge {name!r}, and this resume was given none; no agent named "
        f"{name!r} is here to be it (the agents are: {', '.join(known)}), and without it the run's judged "
        f"ensures fail closed. Give the agents that define it again (`lockgate run --resume {run_id} --judge "
        f"{shlex.quote(name)} --agents FILE.py`, agents= in Python), or choose another judge (--judge, judge=)")
    error.detail = {"problem": JUDGE_NOT_FOUND, "run_id": run_id, "judge": name, "agents": list(known)}
    return error


#: ``detail["problem"]`` of the ConfigError refusing a resume whose recorded judge is not here
JUDGE_NOT_FOUND = "recorded_judge_not_found"


def _deferring(call: Callable[[], Any]) -> Any:
    """``call()``, leaving the evaluate commands it starts to the drive."""
    with deferred():
        return call()


class _Calling:
    """The block of one agent call, counted in its agent's calls in flight by run (a class, not
    a generator: it wraps every agent call)."""

    __slots__ = ("runs", "run_id")

    def __init__(self, runs: Counter[str], run_id: str) -> None:
        self.runs, self.run_id = runs, run_id

    def __enter__(self) -> None:
        self.runs[self.run_id] += 1

    def __exit__(self, *exc: object) -> None:
        runs, run_id = self.runs, self.run_id
        runs[run_id] -= 1
        if not runs[run_id]:
            del runs[run_id]
