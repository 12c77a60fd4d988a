"""The runner: drives the consumer protocol with agents, on asyncio.

``await run(spec, inputs, agents=..., gates=...)`` plans a run, executes every ready ``do`` step
and fanout item through its agent concurrently, reports each result with ``step_done`` (a retry
gets the previous violations in its Task), asks a :class:`~lockgate.engine.gatechannel.GateChannel`
for gate decisions, and returns when the run is complete, failed, killed or cancelled, or when it
only waits at gates nobody answered (status ``await_gate``).

Limits: at most ``max_running`` agent calls run at once (default 10); at most
``max_outstanding`` may be running or queued (default 100): a run that would exceed it stops with a
:class:`~lockgate.errors.RunnerError` instead of queueing without bound. Fanout ``concurrency`` is
enforced by the engine, which issues no more items than that at once.

Cancelling the task running :func:`run` cancels every agent call (their processes are killed),
records the run as cancelled and re-raises.

``judged`` ensures are answered by the judge: ``judge=`` (an agent name, an agent or a callable
``judge(statement, stakes, result, input)``), else the engine's own ``judge``, else ``judge`` in
lockgate.toml. A judge is asked on the runner's loop while other agents keep running (see
:meth:`lockgate.engine.judge.JudgeBridge.settle`); it counts as a running agent call.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import (
    ConcurrencyConflict,
    ConfigError,
    EngineError,
    RunnerError,
    SpecError,
    StaleToken,
)
from .agents import Agent, AgentResult, Task, preflight
from .agents.config import ProjectConfig, RunnerSettings, load_config
from .agents.registry import AgentLike, AgentRegistry, known_agents, resolve_agent
from .gatechannel import Decision, GateChannel, GateRequest
from .judge import AgentJudge, JudgeBridge, JudgeLike, Question, as_judge, ask_judge
from .progress import Emitter, Observer, ProgressEvent

TERMINAL = ("complete", "error", "killed", "cancelled")
_WAKE: Any = {"status": "__wake__"}  # a gate was left waiting: re-check whether work remains
DISPATCH_STATUSES = ("execute_step", "ensure_failed", "schema_failed")
CONFLICT_RETRIES = 5


@dataclass
class RunResult:
    """How a run ended (or stopped): ``status`` is a protocol status, ``response`` the last
    response of the engine, ``events`` every progress event emitted."""

    run_id: str
    status: str
    response: dict[str, Any]
    events: list[ProgressEvent] = field(default_factory=list)

    @property
    def output(self) -> Any:
        return self.response.get("output")

    @property
    def ok(self) -> bool:
        return self.status == "complete"

    @property
    def waiting_gates(self) -> list[dict[str, Any]]:
        return list(self.response.get("gates") or [])


class Admission:
    """Agent-call admission for one run: a semaphore for running calls and a bound on running
    plus queued calls that fails instead of queueing without limit."""

    def __init__(self, settings: RunnerSettings) -> None:
        self.settings = settings
        self._running = asyncio.Semaphore(settings.max_running)
        self.outstanding = 0
        self.active = 0
        self.peak = 0

    def reserve(self, run_id: str, step_id: str) -> None:
        if self.outstanding >= self.settings.max_outstanding:
            raise RunnerError(
                f"run {run_id}: starting {step_id!r} would make more than max_outstanding = "
                f"{self.settings.max_outstanding} agent calls outstanding (running or queued); "
                "raise [runner] max_outstanding in lockgate.toml or bound the fanout's "
                "concurrency")
        self.outstanding += 1

    def release(self) -> None:
        self.outstanding -= 1

    async def __aenter__(self) -> Admission:
        await self._running.acquire()
        self.active += 1
        self.peak = max(self.peak, self.active)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.active -= 1
        self._running.release()


class Runner:
    """Drives one engine with agents and a gate channel; one Runner can drive many runs."""

    def __init__(self, engine: Any, *, agents: Mapping[str, AgentLike] | None = None,
                 registry: AgentRegistry | None = None, config: ProjectConfig | None = None,
                 gates: GateChannel | None = None, on_event: Observer | None = None,
                 settings: RunnerSettings | None = None, workspace: str | os.PathLike | None = None,
                 judge: JudgeLike | None = None) -> None:
        self.engine = engine
        self.config = config if config is not None else load_config(start=workspace)
        self.settings = settings or self.config.runner
        self.gates = gates
        self.workspace = str(workspace) if workspace is not None else None
        self._explicit = dict(agents or {})
        self._registry = registry
        self._agents: dict[str, Agent] = {}
        self.on_event = on_event
        self._judge_choice = judge
        self._bridge: JudgeBridge | None = None
        self._judge_ready = False

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
        spec = _as_spec(spec)
        bridge = self.install_judge()
        await self.preflight(agent_names(spec, flow))
        if bridge is not None and isinstance(bridge.judge, AgentJudge) and uses_judged(spec, flow):
            await preflight(bridge.judge.agent)
        response = await self.transition(lambda: self.engine.plan(spec, dict(inputs or {}), flow=flow))
        return await _Drive(self, response).drive()

    async def resume(self, run_id: str) -> RunResult:
        """Continue a run from its durable state (after a crash, or after a gate decision)."""
        self.install_judge()
        response = await self.transition(lambda: self.engine.resume(run_id), run_id=run_id)
        return await _Drive(self, response).drive()

    # --- the judge ---------------------------------------------------------------------------------

    def install_judge(self) -> JudgeBridge | None:
        """Resolve the judge once and install it on the engine behind a :class:`JudgeBridge`.

        Precedence: ``judge=`` given to this runner, then the engine's own ``judge``, then
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

    def _judge_agent(self, name: str, where: str) -> Agent:
        names = known_agents(explicit=self._explicit, registry=self._registry, config=self.config)
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
        here, without blocking the loop (see :meth:`JudgeBridge.settle`)."""
        bridge = self._bridge
        # an engine with a dispatcher settles more transactions after the first is saved, so
        # abandoning one for a verdict is not safe: it asks the judge blocking, as without a runner
        if bridge is None or getattr(self.engine, "dispatcher", None) is not None:
            return call()
        where = cwd or self.workspace or os.getcwd()

        async def ask(question: Question) -> Any:
            if admission is None:
                return await ask_judge(bridge.judge, question, run_id=run_id, step_id=step_id, cwd=where)
            async with admission:
                return await ask_judge(bridge.judge, question, run_id=run_id, step_id=step_id, cwd=where)

        return await bridge.settle(call, ask)

    def cancellable(self) -> list[Any]:
        """Every agent with calls this runner may have in flight: step agents and the judge's."""
        agents: list[Any] = list(self._agents.values())
        judge = self._bridge.judge if self._bridge is not None else None
        if isinstance(judge, AgentJudge) and all(judge.agent is not a for a in agents):
            agents.append(judge.agent)
        return agents


class _Drive:
    """The state of one run being driven: agent calls and gate questions in flight."""

    def __init__(self, runner: Runner, response: dict[str, Any]) -> None:
        self.runner = runner
        self.engine = runner.engine
        self.emit = Emitter(runner.on_event)
        self.watch_store = runner.on_event is not None
        self.first = response
        self.run_id = str(response.get("run_id", ""))
        self.admission = Admission(runner.settings)
        self.calls: dict[str, asyncio.Task[None]] = {}     # dispatch token -> agent call
        self.asks: dict[str, asyncio.Task[None]] = {}      # gate token -> gate question
        self.unanswered: dict[str, dict[str, Any]] = {}    # gate token -> gate left waiting
        self.finished: set[str] = set()                     # tokens already reported
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.seen_seq = self._last_seq()
        self.newest = response

    async def drive(self) -> RunResult:
        if self.first.get("status") == "error" and not self.run_id:
            return self._finish(self.first)
        try:
            return await self._loop(self.first)
        except asyncio.CancelledError:
            await self._stop_all()
            self._cancel_run()
            raise
        except BaseException:
            await self._stop_all()
            raise

    async def _loop(self, response: dict[str, Any]) -> RunResult:
        """Every response's new dispatches are started; whether the run is over, and which
        gates wait, is read from the newest response (engine calls are serialised on the loop,
        so the newest one describes the current state)."""
        self.newest = response
        while True:
            self._tail_store_events()
            current = self.newest
            if current.get("status") in TERMINAL:
                await self._stop_all()
                return self._finish(current)
            for answer in (response, current) if response is not current else (current,):
                if answer.get("status") in DISPATCH_STATUSES:
                    self._schedule_dispatches(answer)
            self._schedule_gates(current)
            if not self.calls and not self.asks and self.inbox.empty():
                if self.unanswered:
                    return self._finish({**current, "status": "await_gate"})
                raise RunnerError(f"run {self.run_id}: the engine answered "
                                  f"{current.get('status')!r} with no work to do and no gate "
                                  "waiting")
            response = await self._next_response()

    async def _next_response(self) -> dict[str, Any]:
        """The next engine response from a finished call or gate; a gate left unanswered only
        wakes the loop to re-check whether any work remains."""
        while True:
            item = await self.inbox.get()
            if isinstance(item, BaseException):
                raise item
            if item is not _WAKE:
                return item
            if not self.calls and not self.asks:
                return self.newest

    # --- agent calls ---------------------------------------------------------------------------

    def _schedule_dispatches(self, response: dict[str, Any]) -> None:
        entries = list(response.get("ready") or [])
        if response.get("token") and response.get("kind") in ("do", "fanout_item"):
            entries.append({k: response[k] for k in response if k not in ("ready", "gates")})
        for entry in entries:
            token = entry.get("token")
            if not token or token in self.calls or token in self.finished:
                continue
            self.admission.reserve(self.run_id, entry["step_id"])
            self.calls[token] = asyncio.ensure_future(self._call(entry))

    async def _call(self, entry: dict[str, Any]) -> None:
        token = entry["token"]
        try:
            async with self.admission:
                result = await self._execute(entry)
            response = await self._report(entry, result)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self.inbox.put_nowait(exc)
            return
        finally:
            self.admission.release()
            self.calls.pop(token, None)
            self.finished.add(token)
        if response is not None:
            self.inbox.put_nowait(response)

    async def _execute(self, entry: dict[str, Any]) -> AgentResult:
        name = entry.get("agent") or "claude"
        agent = self.runner.agent(name)
        task = self._task(entry, name)
        self.emit("step_started", self.run_id, step_id=task.step_id, attempt=task.attempt,
                  agent=name, data=_stage_data(entry))
        return await agent.execute(task)

    def _task(self, entry: dict[str, Any], agent: str) -> Task:
        previous = entry.get("previous_failure")
        violations: tuple[Any, ...] = ()
        reason = None
        if isinstance(previous, Mapping):
            violations = tuple(v for v in previous.get("violations") or () if isinstance(v, Mapping))
            reason = previous.get("reason")
        elif previous:
            reason = str(previous)
        reason = reason or _revision_note(entry)
        cwd = entry.get("cwd") or self.runner.workspace or os.getcwd()
        return Task(run_id=self.run_id, step_id=entry["step_id"], prompt=str(entry.get("task") or ""),
                    agent=agent, attempt=int(entry.get("attempt") or 1), previous_failure=reason,
                    violations=violations, contract=entry.get("output_contract"),
                    schema=entry.get("output_schema"), cwd=str(cwd),
                    inputs=dict(entry.get("inputs") or {}))

    async def _report(self, entry: dict[str, Any], result: AgentResult) -> dict[str, Any] | None:
        """``step_done`` for one result; None when the dispatch went stale meanwhile."""
        step_id, token = entry["step_id"], entry["token"]
        try:
            response = await self._engine_call(
                self.engine.step_done, self.run_id, step_id,
                result.output if result.ok else None, token,
                failure=None if result.ok else result.failure, usage=_usage(result),
                judging=step_id, cwd=entry.get("cwd"))
        except StaleToken:
            return None
        self._emit_outcome(entry, result, response)
        return response

    def _emit_outcome(self, entry: dict[str, Any], result: AgentResult,
                      response: dict[str, Any]) -> None:
        step_id, attempt = entry["step_id"], int(entry.get("attempt") or 1)
        common = dict(step_id=step_id, attempt=attempt, agent=entry.get("agent"))
        if response.get("failed_step") == step_id:
            failure = response.get("failure") or {}
            self.emit("step_failed", self.run_id, violations=response.get("violations") or (),
                      message=failure.get("reason") or result.failure, **common)
            if response.get("status") in ("ensure_failed", "schema_failed") \
                    and response.get("step_id") == step_id:
                self.emit("step_retrying", self.run_id, step_id=step_id,
                          attempt=int(response.get("attempt") or attempt + 1),
                          agent=entry.get("agent"), violations=response.get("violations") or ())
        elif response.get("status") == "error" and response.get("step_id") == step_id:
            self.emit("step_failed", self.run_id, violations=response.get("violations") or (),
                      message=response.get("message") or result.failure, **common)
        else:
            self.emit("step_succeeded", self.run_id, data={
                "output": result.output, "usage": result.usage.to_json(),
                "duration_ms": result.telemetry.duration_ms, **_stage_data(entry)}, **common)

    # --- gates ---------------------------------------------------------------------------------

    def _schedule_gates(self, response: dict[str, Any]) -> None:
        gates = list(response.get("gates") or [])
        if response.get("status") == "await_gate" and not gates:
            gates = [response]
        live = {g.get("token") for g in gates}
        for token in [t for t in self.asks if t not in live]:
            self.asks.pop(token).cancel()
        for token in [t for t in self.unanswered if t not in live]:
            self.unanswered.pop(token)
        for gate in gates:
            token = gate.get("token")
            if not token or token in self.asks or token in self.unanswered:
                continue
            request = GateRequest.from_response({"run_id": self.run_id, **gate})
            self.emit("gate_waiting", self.run_id, step_id=request.step_id,
                      data={"round": gate.get("round"), "max_rounds": gate.get("max_rounds")})
            if self.runner.gates is None:
                self.unanswered[token] = gate
                continue
            self.asks[token] = asyncio.ensure_future(self._ask(request, gate))

    async def _ask(self, request: GateRequest, gate: dict[str, Any]) -> None:
        try:
            decision = await self.runner.gates.decide(request)  # type: ignore[union-attr]
            if decision is None:
                self.unanswered[request.token] = gate
                self.inbox.put_nowait(_WAKE)
                return
            response = await self._resolve(request, decision)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self.inbox.put_nowait(exc)
            return
        finally:
            self.asks.pop(request.token, None)
        self.inbox.put_nowait(response)

    async def _resolve(self, request: GateRequest, decision: Decision) -> dict[str, Any]:
        if decision.applied:
            response = await self._engine_call(self.engine.status, self.run_id)
        else:
            try:
                response = await self._engine_call(
                    self.engine.gate_resolve, self.run_id, request.step_id, decision.outcome,
                    decision.rationale, decision.resolved_by, request.token,
                    judging=request.step_id)
            except StaleToken:  # decided elsewhere first: continue from the durable state
                return await self._engine_call(self.engine.status, self.run_id)
        self.emit("gate_resolved", self.run_id, step_id=request.step_id,
                  message=decision.rationale or None,
                  data={"decision": decision.outcome, "resolved_by": decision.resolved_by,
                        "elsewhere": decision.applied})
        return response

    # --- engine, store, shutdown ---------------------------------------------------------------

    async def _engine_call(self, method: Any, *args: Any, judging: str | None = None,
                           cwd: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """``method(*args, **kwargs)`` of the engine, replayed on a concurrency conflict; a judge
        it needs is asked on the loop, as a running agent call about step ``judging``."""
        async def attempt() -> Any:
            return await self.runner.transition(lambda: method(*args, **kwargs), run_id=self.run_id,
                                                step_id=judging, cwd=cwd, admission=self.admission)

        for _ in range(CONFLICT_RETRIES):
            try:
                response = await attempt()
                break
            except ConcurrencyConflict:
                continue
        else:
            response = await attempt()
        return self._note(response)

    def _note(self, response: Any) -> Any:
        if isinstance(response, dict) and response.get("status"):
            self.newest = response
        return response

    def _last_seq(self) -> int:
        store = getattr(self.engine, "store", None)
        if not self.watch_store or store is None or not self.run_id:
            return 0
        try:
            events = store.events(self.run_id)
        except Exception:
            return 0
        for event in events:
            self._translate(event)
        return events[-1].seq if events else 0

    def _tail_store_events(self) -> None:
        """Progress the engine decided on its own (skips) comes from the durable event log."""
        store = getattr(self.engine, "store", None)
        if not self.watch_store or store is None or not self.run_id:
            return
        for event in store.events(self.run_id, self.seen_seq):
            self.seen_seq = event.seq
            self._translate(event)

    def _translate(self, event: Any) -> None:
        if event.type in ("skipped", "fanout_item_skipped"):
            self.emit("step_skipped", self.run_id, step_id=event.step_id,
                      message=event.detail.get("reason"))

    async def _stop_all(self) -> None:
        pending = [*self.calls.values(), *self.asks.values()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*(a.cancel() for a in self.runner.cancellable()),
                             return_exceptions=True)
        await asyncio.gather(*pending, return_exceptions=True)
        self.calls.clear()
        self.asks.clear()

    def _cancel_run(self) -> None:
        if not self.run_id:
            return
        try:  # a cancel evaluates no ensure: no judge, so no need to await anything
            response = self._note(_retry_conflicts(lambda: self.engine.cancel(self.run_id)))
        except EngineError:
            return
        self._finish(response if isinstance(response, dict) else {"status": "cancelled"})

    def _finish(self, response: dict[str, Any]) -> RunResult:
        status = str(response.get("status"))
        self.emit("run_finished", self.run_id, status=status,
                  message=response.get("message") or response.get("reason"),
                  data={k: response[k] for k in ("error_type", "output", "spent") if k in response})
        return RunResult(self.run_id, status, response, list(self.emit.history))


# --- module API --------------------------------------------------------------------------------


async def run(spec: Any, inputs: Mapping[str, Any] | None = None, *, flow: str | None = None,
              agents: Mapping[str, AgentLike] | None = None, store: Any = None,
              gates: GateChannel | None = None, workspace: str | os.PathLike | None = None,
              on_event: Observer | None = None, engine: Any = None,
              registry: AgentRegistry | None = None, config: ProjectConfig | None = None,
              max_running: int | None = None, max_outstanding: int | None = None,
              judge: JudgeLike | None = None) -> RunResult:
    """Run ``spec`` (a Spec, a LoadResult, a path or YAML text) to completion with agents.

    ``agents`` maps agent names to adapters or Python callables (highest precedence, then the
    registry, then lockgate.toml, then the built-ins). ``store`` is a Store or a store URL
    (default: the SQLite store under ``.lockgate/``). ``workspace`` (default: the current
    directory) is where agents work and file predicates look. ``gates=None`` leaves gates waiting
    and returns with status ``await_gate``. ``judge`` answers ``judged`` ensures: an agent name
    (resolved like a step's agent), an agent, or a callable ``judge(statement, stakes, result,
    input) -> {holds, reason}``; default: the engine's judge, else ``judge`` in lockgate.toml.
    """
    runner = make_runner(engine=engine, store=store, workspace=workspace, agents=agents,
                         registry=registry, config=config, gates=gates, on_event=on_event,
                         max_running=max_running, max_outstanding=max_outstanding, judge=judge)
    return await runner.start(spec, inputs, flow=flow)


def run_sync(spec: Any, inputs: Mapping[str, Any] | None = None, **options: Any) -> RunResult:
    """:func:`run` for code that has no event loop running (scripts, the CLI)."""
    return asyncio.run(run(spec, inputs, **options))


async def resume(run_id: str, **options: Any) -> RunResult:
    """Continue an existing run with agents (same options as :func:`run`)."""
    runner = make_runner(**options)
    return await runner.resume(run_id)


def make_runner(*, engine: Any = None, store: Any = None,
                workspace: str | os.PathLike | None = None, max_running: int | None = None,
                max_outstanding: int | None = None, config: ProjectConfig | None = None,
                **options: Any) -> Runner:
    """A Runner over ``engine`` (or a new Engine on ``store``) with limits applied; the other
    options (``agents``, ``registry``, ``gates``, ``on_event``, ``judge``) go to :class:`Runner`."""
    config = config if config is not None else load_config(start=workspace)
    if engine is None:
        engine = _engine(store, workspace)
    base = config.runner
    settings = RunnerSettings(max_running=max_running or base.max_running,
                              max_outstanding=max_outstanding or base.max_outstanding)
    if settings.max_outstanding < settings.max_running:
        raise RunnerError(f"max_outstanding ({settings.max_outstanding}) must be at least "
                          f"max_running ({settings.max_running})")
    return Runner(engine, config=config, settings=settings, workspace=workspace, **options)


def _engine(store: Any, workspace: Any) -> Any:
    from .engine import Engine
    from .store import open_store

    if store is None or isinstance(store, (str, os.PathLike)):
        store = open_store(store)
    return Engine(store=store, workspace=workspace if workspace is not None else Path.cwd())


def _as_spec(spec: Any) -> Any:
    """A Spec from a Spec, a LoadResult, a path or YAML text (SpecError when it has errors)."""
    from ..dsl.ir import Spec
    from .engine import _coerce_spec

    if isinstance(spec, Spec):
        return spec
    if hasattr(spec, "diagnostics") and hasattr(spec, "spec"):
        if spec.spec is None:
            errors = getattr(spec, "errors", [])
            detail = f": {errors[0].message}" if errors else ""
            raise SpecError(f"the spec is invalid ({len(errors)} errors){detail}", spec.diagnostics)
        return spec.spec
    if isinstance(spec, os.PathLike):
        spec = Path(spec)
    return _coerce_spec(spec)


def agent_names(spec: Any, flow: str | None = None) -> list[str]:
    """Every agent name the flow (and the subflows it runs) may dispatch to, in order."""
    names: dict[str, None] = {}
    for step in _flow_steps(spec, flow):
        if step.do is not None:
            names[step.agent or "claude"] = None
        if step.fanout is not None:
            for stage in step.fanout.stages:
                names[stage.agent or step.agent or "claude"] = None
    return list(names)


def uses_judged(spec: Any, flow: str | None = None) -> bool:
    """Whether the flow (or a subflow it runs) has a ``judged`` ensure anywhere."""
    for step in _flow_steps(spec, flow):
        ensures = [*step.ensure, *(e for st in (step.fanout.stages if step.fanout else ()) for e in st.ensure)]
        if any(e.kind == "judged" for e in ensures):
            return True
    return False


def _flow_steps(spec: Any, flow: str | None) -> Iterator[Any]:
    """The steps of the flow, then of each subflow it runs (each flow once)."""
    start = flow or spec.entry or next(iter(spec.flows), None)
    todo, seen = [start], set()
    while todo:
        name = todo.pop()
        if name in seen or spec.flows.get(name) is None:
            continue
        seen.add(name)
        for step in spec.flows[name].steps:
            yield step
            if step.run:
                todo.append(step.run)


def _retry_conflicts(call: Callable[[], Any]) -> Any:
    for _ in range(CONFLICT_RETRIES):
        try:
            return call()
        except ConcurrencyConflict:
            continue
    return call()


def _usage(result: AgentResult) -> dict[str, float] | None:
    usage = {k: v for k, v in result.usage.to_json().items() if v}
    return usage or None


def _stage_data(entry: Mapping[str, Any]) -> dict[str, Any]:
    if entry.get("kind") != "fanout_item":
        return {}
    return {"fanout": entry.get("fanout"), "item_index": entry.get("item_index"),
            "stage": entry.get("stage")}


def _revision_note(entry: Mapping[str, Any]) -> str | None:
    """The feedback for work a gate's revise sent back: the engine's ``revision`` on the dispatch
    (persisted, so it survives a restart), when the gate gave a note."""
    revision = entry.get("revision")
    if not isinstance(revision, Mapping) or not revision.get("note"):
        return None
    return f"revision requested at gate {revision.get('gate')!r}: {revision['note']}"
