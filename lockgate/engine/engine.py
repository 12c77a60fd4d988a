"""The consumer protocol: :class:`Engine`, the Python API behind the CLI, the notebook and MCP.

Every call that changes a run is one transaction: load (or reuse) the live run, apply the
transition, persist the header plus only the changed records and the new events with the version
read (optimistic concurrency), then answer. A refusal (stale token, unknown step, ...) raises an
:class:`~lockgate.errors.EngineError` and changes nothing. When another process wrote first the
transaction is replayed on fresh state, so a racing duplicate is refused as a duplicate and a
racing independent result is applied, never lost.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any

from ..dsl.ir import Spec
from ..dsl.values import UNDEFINED
from ..errors import (
    ConcurrencyConflict,
    EngineError,
    InputValidationError,
    RunDriven,
    SpecError,
    StoreError,
    UnstorableValue,
)
from . import checkpoints, drivers, evaluate, fanout, live, worktrees
from .advance import advance
from .budget import finite_number
from .carry import materialise
from .commands import Commands
from .compiled import CompiledSpec, compiled
from .drivers import DRIVER_KEY, Driver
from .evaluate import Evaluated, Evaluator, run_command
from .gates import DECISIONS
from .gates import gate_resolve as _gate_resolve
from .judge import settle_here
from .live import Env, LiveRun, Report
from .model import (
    RUN_CANCELLED,
    RUN_RUNNING,
    SPEC_KEY,
    WAITING_GATE,
    Header,
    StepState,
    now,
)
from .responses import dispatch_entry, gate_entry, response, trace
from .results import late_spend, park, parked, parked_decision, unpark, unstorable
from .results import step_done as _step_done
from .specdata import spec_data
from .store import codec
from .textargs import decision_text, mend_unstorable

MAX_REPLAYS = 8
#: A cancel reason longer than this is cut in the audit.
MAX_CANCEL_REASON = 1000


class Engine:
    """Plans runs of validated specs and settles what consumers report, over a :class:`Store`.

    ``store`` defaults to an in-memory store; ``workspace`` is the directory file predicates and
    worktrees are jailed to (None: file predicates fail closed); ``judge`` answers ``judged``
    ensures; ``dispatcher`` lets the engine execute engine-dispatch fanout items itself (an
    agent with ``async execute(task)``, or a sync/async callable taking the dispatch dict);
    ``evaluator`` runs ``evaluate`` steps (see :mod:`lockgate.engine.evaluate`): by default
    ``/bin/sh -c`` in the workspace, None for none (evaluate steps then fail).

    The engine runs an evaluate command itself, outside any transaction, before the call that
    started it returns (unless the call is made in an :func:`lockgate.engine.evaluate.deferred`
    block, as the runner does). ``around_commands(call)`` is a context manager factory entered
    around each such command (``call``: its step, command, input, timeout, ...): a server that
    serialises engine calls under a lock releases it there, so that other calls go on while a
    command runs; a command line says what runs while it waits. ``around_waits()`` is entered
    the same way around each wait of a call for another process (a decision whose commands wait
    for a stopping driver to give the run up: see :mod:`lockgate.engine.commands`).
    """

    def __init__(self, store: Any = None, workspace: str | Path | None = None,
                 judge: Callable[..., Any] | None = None, dispatcher: Any = None,
                 evaluator: Evaluator | None = run_command) -> None:
        if store is None:
            from .store import open_store

            store = open_store("memory")
        self.store = store
        self.workspace = Path(workspace).resolve() if workspace is not None else None
        self.judge = judge
        self.dispatcher = dispatcher
        self.evaluator = evaluator
        self.around_commands: Callable[[Mapping[str, Any]], AbstractContextManager[Any]] = _no_context
        self.around_waits: Callable[[], AbstractContextManager[Any]] = nullcontext
        self._live: dict[str, LiveRun] = {}
        self._drives: dict[str, Driver] = {}  # run id -> this process's drive of it (see claim)
        self._commands = Commands(self)

    # -- protocol ---------------------------------------------------------------------------------

    def plan(self, spec: Spec | str | Path, inputs: Mapping[str, Any] | None, flow: str | None = None, *,
             driver: Driver | None = None) -> dict[str, Any]:
        """Validate ``inputs`` strictly, create a run of ``flow`` (default the entry flow) and
        return its first dispatches. Nothing is stored when the spec or the inputs are invalid.
        ``driver``: the drive about to call the run's agents, claiming it in the same transaction
        (see :meth:`claim`)."""
        data, cspec, name = _compiled_flow(spec, flow)
        inputs = _check_inputs(cspec, name, inputs)
        stamp = now()
        header = Header(id=uuid.uuid4().hex[:16], flow=name, inputs=inputs, digest=cspec.digest,
                        workspace=str(self.workspace) if self.workspace else None, created_at=stamp,
                        updated_at=stamp)
        steps = {sid: StepState(sid) for sid in cspec.flows[name].order}
        run = LiveRun(header, cspec, steps, 0, self._env(), planned=True)
        run.begin()
        run.event("planned", None, flow=name, inputs=inputs, digest=cspec.digest)
        materialise(run, "")
        # a step with dependencies cannot start before one of them settles, which queues it then
        run.work.extend(sid for sid, cstep in cspec.flows[name].steps.items() if not cstep.deps)
        advance(run)
        records = run.record_dicts()
        records[SPEC_KEY] = {"key": SPEC_KEY, "data": data, "inputs": inputs}
        if driver is not None:
            records[DRIVER_KEY] = run.driver = driver.to_dict()
        run.version = self.store.create_run(header.id, header.to_dict(), records, list(run.events))
        self._live[header.id] = run
        if driver is not None:
            self._drives[header.id] = driver
        return {**self._drive(header.id, response(run, everything=True), everything=True), "digest": cspec.digest}

    def step_done(self, run_id: str, step_id: str, result: Any, token: str | None, failure: Any = None,
                  usage: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Report the result (or ``failure``) of a dispatched step or fanout item stage."""
        spend = dict(usage) if usage is not None and isinstance(usage, Mapping) else usage
        return self._drive(run_id, self._report(run_id, _step_id(step_id), result, token, failure, spend))

    def gate_resolve(self, run_id: str, step_id: str, outcome: str, rationale: str = "",
                     resolved_by: str = "human", token: str | None = None, *, via: str | None = None) -> dict[str, Any]:
        """Approve, revise or kill (``reject``) a waiting gate, fenced by its gate token. ``via``:
        the surface the decision came through (``"mcp"``, ``"cli"``, ``"notebook"``), kept in its
        audit event (``resolved_by`` is only what the caller says); None, the default, keeps none."""
        rationale, resolved_by = decision_text(rationale, resolved_by)  # refused before anything is held
        if via is not None and not (isinstance(via, str) and via.isidentifier() and len(via) <= 32):
            raise EngineError(f"via names a surface (a short word such as 'mcp'), not {via!r:.80}",
                              error_type="invalid_arguments")
        held = self._park_decision(run_id, _step_id(step_id), outcome, rationale, resolved_by, token, via)
        try:
            out = self._transact(run_id, lambda run: _settled(_gate_resolve, run, step_id, outcome, rationale,
                                                              resolved_by, token, via))
        except EngineError:
            if held is not None:  # refused, changing nothing: nothing stays held either
                self._transact(run_id, lambda run: unpark(run, step_id, held))
            raise
        return self._drive(run_id, out)

    def evaluated(self, run_id: str, step_id: str, token: str | None, answer: Evaluated) -> dict[str, Any]:
        """Settle the ``answer`` of an evaluate command a caller ran for the ``evaluate`` entry of
        a response (see :func:`lockgate.engine.evaluate.deferred`), fenced by the entry's token."""
        if not isinstance(answer, Evaluated) or not finite_number(answer.took_ms) or answer.took_ms < 0:
            raise EngineError("an evaluate answer is an Evaluated(envelope, error, took_ms) with took_ms a finite "
                              f"number >= 0, not {answer!r:.200}", error_type="invalid_arguments")
        out = self._transact(run_id, lambda run: _settled(evaluate.settle, run, _step_id(step_id), token, answer))
        return self._drive(run_id, out)

    def resolve_waiting_gate(self, run_id: str, step_id: str, outcome: str, rationale: str = "",
                             resolved_by: str = "human", *, via: str | None = None) -> dict[str, Any]:
        """Decide a gate that waits now, using its current token.

        For people deciding from the CLI or a notebook, who hold no token: the decision applies
        to the round that is waiting at this moment. Refused (``not_awaiting``) when the step is
        not a waiting gate, saying which gates wait, or how the run ended when it has.
        """
        status = self.status(run_id)
        gates = {g["step_id"]: g for g in status.get("gates", [])}
        if _step_id(step_id) not in gates:
            ended = _how_it_ended(status)
            last = self._last_decision(run_id, _step_id(step_id))
            if ended is not None:
                lost = f" (gate {step_id}'s last decision: {last}); your {outcome} was not applied" if last else ""
                raise EngineError(f"run {run_id} {ended}; its gates take no more decisions{lost}",
                                  error_type="not_awaiting")
            waiting = ", ".join(gates) or "none"
            if last is not None:  # decided meanwhile, say by another person at another terminal
                raise EngineError(f"gate {step_id} of run {run_id} is not waiting for a decision (its last: {last}); "
                                  f"your {outcome} was not applied and nothing changed (waiting gates: {waiting})",
                                  error_type="not_awaiting")
            raise EngineError(f"step {step_id} of run {run_id} is not a waiting gate (waiting gates: {waiting})",
                              error_type="not_awaiting")
        return self.gate_resolve(run_id, step_id, outcome, rationale, resolved_by, gates[step_id]["token"], via=via)

    def _last_decision(self, run_id: str, step_id: str) -> str | None:
        """The last decision taken at gate ``step_id``, for a person ("approve by carol: ship it"),
        or None when it has none."""
        st = self._get(run_id, fresh=True).steps.get(step_id)
        if st is None or not st.decisions:
            return None
        last = st.decisions[-1]
        why = last.get("rationale")
        return f"{last.get('decision')} by {last.get('resolved_by') or 'someone'}{f': {why}' if why else ''}"

    def cancel(self, run_id: str, reason: str | None = None) -> dict[str, Any]:
        """Cancel a running run, burning every outstanding token; other statuses are reported.
        ``reason`` (why it was cancelled: a limit, a person) is kept in the audit's
        ``flow_cancelled`` event, cut to :data:`MAX_CANCEL_REASON` characters.

        The git worktrees of the items in flight are removed (semantics §6.8) once the cancel
        is committed, not before: a cancel whose save conflicts is replayed on what the writer
        that came first stored, where the run may have moved on. A crash in between leaves
        them on disk."""
        if reason is not None and not isinstance(reason, str):
            raise EngineError(f"a cancel reason is text, not {type(reason).__name__}", error_type="invalid_arguments")

        def apply(run: LiveRun) -> None:
            if run.header.status != RUN_RUNNING:
                return
            run.release_worktrees(run.fan_worktrees())
            burned = []
            for key in [*run.outstanding, *run.waiting, *run.evaluating]:
                st = run.steps[key]
                st.token = None
                run.touch(st)
                burned.append(key)
            run.outstanding.clear()
            run.waiting.clear()
            run.evaluating.clear()
            run.header.status = RUN_CANCELLED
            run.header.cancel_requested = True
            run.header.finished_at = now()
            run.event("flow_cancelled", None, burned=burned, **({"reason": _storable_text(reason)} if reason else {}))

        before = self._get(run_id, fresh=True).header.status
        out = self._transact(run_id, apply)
        if before != RUN_RUNNING:
            out["reason"] = f"already_{before}"
        return out

    def resume(self, run_id: str) -> dict[str, Any]:
        """Rehydrate a run from the store (verifying its spec digest) and describe all its
        outstanding work, with the same tokens as before; an evaluate command found running
        (its process stopped or died) is started again under a new token."""
        self._live.pop(codec.check_run_id(run_id, existing=True), None)
        run = self._get(run_id)
        if run.header.status == RUN_CANCELLED:
            raise EngineError(f"run {run_id} is cancelled", error_type="run_cancelled", run_id=run_id)

        def apply(live: LiveRun) -> None:
            live.event("resumed", None, outstanding=list(live.outstanding), waiting=list(live.waiting),
                       **({"evaluating": list(live.evaluating)} if live.evaluating else {}))
            live.sweep_worktrees()
            if live.header.status == RUN_RUNNING and drivers.commands_ours(live, self._drives.get(run_id)):
                drivers.await_stopped(live.driver)  # a dead process's commands may still be stopping
                for key in list(live.evaluating):
                    if live.steps[key].token not in self._commands.running:  # not one running here now
                        evaluate.restart(live, key)
            live.work.extend(k for k, st in live.steps.items() if st.status == "pending" and not st.dropped)
            advance(live)

        out = self._transact(run_id, apply, everything=True)
        return {**self._drive(run_id, out, everything=True), "digest": run.header.digest}

    # -- drives ---------------------------------------------------------------------------------

    def claim(self, run_id: str, driver: Driver, *, take_over: bool = False) -> None:
        """Record ``driver`` as the process driving the run's agents (see
        :mod:`lockgate.engine.drivers`): RunDriven, changing nothing, while another live process
        drives it, unless ``take_over``."""
        self._transact(run_id, lambda run: drivers.claim(run, driver, take_over))
        self._drives[run_id] = driver

    def stopping(self, run_id: str, driver: Driver) -> None:
        """Say that ``driver``'s drive is stopping: it starts no more work, so a process deciding
        meanwhile waits for the claim to be given up and runs the commands it started itself."""
        self._transact(run_id, lambda run: drivers.stopping(run, driver))

    def renew(self, run_id: str, driver: Driver) -> bool:
        """Renew ``driver``'s claim on the run; False when another process took the run over."""
        try:
            self._transact(run_id, lambda run: drivers.renew(run, driver))
        except RunDriven:
            self._drives.pop(run_id, None)
            return False
        return True

    def driver_of(self, run_id: str) -> Driver | None:
        """The live process driving the run's agents now, or None (see :mod:`lockgate.engine.drivers`)."""
        return drivers.holding(self._get(run_id, fresh=True).driver)

    def drive_here(self, run_id: str) -> Driver | None:
        """The drive of this process that claimed the run through this engine (its runner's),
        whether or not it still holds it, or None: the commands this engine runs for a caller
        are left to that drive while it holds the run (see :mod:`lockgate.engine.commands`)."""
        return self._drives.get(run_id)

    def withdrawn(self, run_id: str, issued: Mapping[str, str]) -> set[str]:
        """The tokens of ``issued`` (token -> step key) whose issuance the run as stored no longer
        holds: their step was issued again (a revert, a take-over), reset or settled, or a cancel
        burned them. An answer under them would be refused, so a drive stops the agent call or
        command it runs for them (see :mod:`lockgate.engine.drive`)."""
        run = self._get(run_id, fresh=True)
        return {token for token, key in issued.items() if (st := run.steps.get(key)) is None or st.token != token}

    def holds(self, run_id: str, driver: Driver) -> bool:
        """Whether the claim recorded on the run is ``driver``'s (not taken over, not released)."""
        claim = self.claim_of(run_id)
        return claim is not None and claim.owner == driver.owner

    def claim_of(self, run_id: str) -> Driver | None:
        """The claim recorded on the run, whether or not its process still lives (None when
        released): a drive tells from it whether it still holds the run."""
        return Driver.from_dict(self._get(run_id, fresh=True).driver)

    def _driven_by(self, run_id: str, out: dict[str, Any]) -> dict[str, Any]:
        """``out`` with ``driven_by`` (which process) while another live process drives the run:
        its agents are doing the dispatches ``out`` lists, which a consumer must not do too. A
        process holding the run otherwise is named apart: ``stopping_by`` while its drive stops
        (Ctrl-C: it starts nothing more, and a resume is refused until it has exited),
        ``commands_by`` while it only runs the run's evaluate commands (nobody does the
        dispatches: they are left for a resume once its commands end)."""
        run = self._live.get(run_id)
        if run is None:  # dropped by a refused transaction (a claim another driver holds)
            run = self._get(run_id)
        record = run.driver if run.header.status == RUN_RUNNING else None
        mine = self._drives.get(run_id)
        if not record or not record.get("owner") or (mine is not None and record["owner"] == mine.owner):
            return out  # nobody drives it, or this process does: no process to look up
        holder = drivers.holding(record)
        if holder is None:
            return out
        if holder.stopping:  # a drive that is stopping carries nothing on
            return {**out, "stopping_by": holder.describe()}
        return {**out, ("commands_by" if holder.commands_only else "driven_by"): holder.describe()}

    def last_config(self, run_id: str) -> str | None:
        """The project configuration file the run's last drive resolved its agents with."""
        return drivers.config_of(self._get(run_id, fresh=True).driver)

    def last_agents(self, run_id: str) -> str | None:
        """Where the run's last drive took its agents from, as its claim records it: the agent
        names given in Python or by an ``--agents`` module, and that module (``python:{...}``,
        read by :mod:`lockgate.engine.agentorigin`), or an older Lockgate's module path alone;
        None when it recorded none."""
        return drivers.agents_of(self._get(run_id, fresh=True).driver)

    def last_judge(self, run_id: str) -> str | None:
        """The agent name of the judge the run's last drive was given (``--judge``, ``judge=``
        by name), as its claim records it; None when it was given none by name."""
        return drivers.judge_of(self._get(run_id, fresh=True).driver)

    def release(self, run_id: str, driver: Driver, *, write: bool = True) -> None:
        """Give up ``driver``'s claim on the run, so another process may drive it at once;
        without ``write``, only in this engine (the run ended: its claim binds nobody)."""
        self._drives.pop(run_id, None)
        if not write:
            return
        current = Driver.from_dict(self._get(run_id, fresh=True).driver)
        if current is not None and current.owner == driver.owner:  # else nothing to write
            self._transact(run_id, lambda run: drivers.release(run, driver))

    def let_go(self, run_id: str, driver: Driver) -> dict[str, Any] | None:
        """Give up ``driver``'s claim on a run it has nothing left to do for, unless the run has
        work for a driver now or has ended: then nothing is written, and the run's status is
        returned to go on with. One transaction with the look at the run, so a decision made
        elsewhere commits either before it (its work, left to this driver, is found) or after
        it (the deciding process finds the run free and runs the work itself)."""
        try:
            self._transact(run_id, lambda run: drivers.let_go(run, driver))
        except drivers.WorkLeft:
            return self.status(run_id)
        self._drives.pop(run_id, None)
        return None

    def commit(self, run_id: str, label: str) -> dict[str, Any]:
        """Save a named checkpoint of the run's state (not its spend)."""
        holder: dict[str, Any] = {}
        self._transact(run_id, lambda run: holder.update(checkpoints.commit(run, label)))
        return holder

    def revert(self, run_id: str, label: str) -> dict[str, Any]:
        """Restore a checkpoint (re-minting tokens) and re-advance; revives finished runs.

        Items the revert drops have their git worktrees removed once it is committed (none is in
        use: a running run with a fanout in flight is not reverted, and a run that ended removed
        its items' worktrees; this clears what a crash or an older engine left behind)."""
        for _ in range(MAX_REPLAYS):
            run = self._get(run_id)
            run.begin()
            try:
                fresh = checkpoints.revert(run, label, self._env())
            except EngineError:
                self._live.pop(run_id, None)
                raise
            try:
                fresh.version = self.store.save_run(run_id, expected_version=run.version,
                                                    header=fresh.header.to_dict(), steps=fresh.record_dicts(
                                                        fresh.dirty), events=fresh.events)
            except ConcurrencyConflict:
                self._live.pop(run_id, None)
                continue
            fresh.release_worktrees([st.worktree for key, st in run.steps.items()
                                     if st.worktree and not st.dropped and fresh.steps[key].dropped])
            _remove_released(fresh)
            self._live[run_id] = fresh
            out = self._drive(run_id, response(fresh, everything=True), everything=True)
            return {**out, "reverted_to": label.strip()}
        raise ConcurrencyConflict(f"run {run_id} kept changing under revert", run_id=run_id)

    # -- reading ----------------------------------------------------------------------------------

    def status(self, run_id: str) -> dict[str, Any]:
        """The run's current response: everything outstanding, or its final status."""
        run = self._get(run_id, fresh=True)
        run.begin()
        return self._driven_by(run_id, response(run, everything=True))

    def evaluations(self, run_id: str) -> list[dict[str, Any]]:
        """The evaluate commands the run has running that no call of this engine runs now, each
        as the call that runs it (its step, token, command, input, ...): for the process that
        drives the run, which runs those its own calls did not start (a gate decided elsewhere
        leaves them to it; one a call of this engine runs, a revert beside its runner's drive,
        is that call's)."""
        run = self._get(run_id, fresh=True)
        if run.header.status != RUN_RUNNING:
            return []
        running = self._commands.running
        return [call for key in run.evaluating if (call := evaluate.call_entry(run, key))["token"] not in running]

    def spec_of(self, run_id: str) -> tuple[Spec, str]:
        """The spec a stored run runs (checked against its digest) and the name of its flow."""
        run = self._get(run_id, fresh=True)
        return run.cspec.spec, run.header.flow

    def audit(self, run_id: str) -> dict[str, Any]:
        """The durable record: header, every step's trace, events with their hashes."""
        run = self._get(run_id, fresh=True)
        header = run.header
        events = [e.to_dict() for e in self.store.events(run_id)]
        out = {
            "run_id": run_id, "flow": header.flow, "status": header.status, "error_type": header.error_type,
            "failure": header.failure, "inputs": header.inputs, "workspace": header.workspace,
            "digest": header.digest, "rounds": header.rounds, "spent": header.spent,
            "budget": dict(run.root.flow.budget), "carry": header.carry, "checkpoints": header.checkpoints,
            "created_at": header.created_at, "finished_at": header.finished_at,
            "total_duration_ms": round(((header.finished_at or header.updated_at) - header.created_at) * 1000, 3),
            "steps_completed": sum(1 for k in run.root.flow.order if run.steps[k].status == "succeeded"),
            "total_steps": run.root.flow.total, "trace": trace(run), "events": events, "version": run.version,
        }
        if header.output is not UNDEFINED:
            out["output"] = header.output
        return out

    def why(self, run_id: str) -> dict[str, Any]:
        """What the run waits on, and the exact command that unblocks each wait."""
        from .explain import explain

        run = self._get(run_id, fresh=True)
        return explain(run)

    def routed(self, run_id: str) -> dict[str, str]:
        """The steps of the run's flow that a route started and that still hold it (an
        ``on_fail`` or a gate's approve or kill), each with the step whose route it was: what
        :func:`~lockgate.engine.runjudge.may_judge` needs to know which routes a revise keeps."""
        run = self._get(run_id, fresh=True)
        return {key: st.routed["from"] for key, st in run.steps.items() if st.routed is not None and "/" not in key}

    def runs(self, status: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.store.list_runs(status=status, limit=limit)]

    def pending_gates(self, limit: int = 100) -> list[dict[str, Any]]:
        """The gates waiting for a decision across running runs (newest run first), at most
        ``limit`` of them, each with its token. ``limit`` counts gates, not runs: most running
        runs wait at none (a step at work, a run left unfinished), so the running runs are read
        until ``limit`` gates are found or none are left, each rebuilt only when its records
        show a gate waiting. A run that cannot be read (its records were edited or damaged, or
        it was deleted meanwhile) is left out, not the others with it: ``lockgate show RUN``
        says what is wrong with it."""
        out: list[dict[str, Any]] = []
        if limit < 1:
            return out
        for summary in _running_runs(self.store):
            try:
                run = self._get(summary.run_id, fresh=True) if _at_gate(self.store, summary.run_id) else None
            except (StoreError, EngineError):
                continue
            for key in run.waiting if run is not None else ():
                out.append({"run_id": summary.run_id, "flow": summary.flow, **gate_entry(run, key)})
                if len(out) == limit:
                    return out
        return out

    def verify(self, run_id: str) -> dict[str, Any]:
        return self.store.verify(run_id).to_dict()

    def close(self) -> None:
        self._live.clear()
        self.store.close()

    # -- machinery ----------------------------------------------------------------------------------

    def _env(self) -> Env:
        return Env(judge=self.judge, evaluator=self.evaluator)

    def _get(self, run_id: str, fresh: bool = False) -> LiveRun:
        if type(run_id) is not str:  # refused as the store refuses it (a list would not even hash)
            codec.check_run_id(run_id)
        run = self._live.get(run_id)
        if run is not None and (not fresh or self.store.current_version(run_id) == run.version):
            return run
        run = load_live(self.store, run_id, self._env())
        self._live[run_id] = run
        return run

    def _transact(self, run_id: str, apply: Callable[[LiveRun], Any], everything: bool = False) -> dict[str, Any]:
        """``apply`` to the run and save it as one transaction, replayed on the stored state when
        another writer got there first. A fanout merge in ``apply`` goes on only while no other
        writer saved (see :class:`~lockgate.engine.fanout.MergeWatch`); what a try merged that
        no saved transition records (the run ended meanwhile) is recorded on its own."""
        watch: fanout.MergeWatch | None = None
        for _ in range(MAX_REPLAYS):
            run = self._get(run_id)
            run.begin()
            try:
                if run.cspec.worktree_merges:
                    watch = watch or fanout.MergeWatch()
                    with watch.over(partial(self._unchanged, run_id, run.version)):
                        apply(run)
                else:
                    apply(run)
            except EngineError:
                self._live.pop(run_id, None)
                if self.store.current_version(run_id) != run.version:
                    continue  # refused on stale state: replay on what is stored now
                self._record_merges(run_id, watch)
                raise
            except BaseException:
                self._live.pop(run_id, None)
                raise
            run.header.updated_at = now()
            try:
                run.version = self.store.save_run(run_id, expected_version=run.version,
                                                  header=run.header.to_dict(),
                                                  steps=run.record_dicts(run.dirty), events=run.events)
            except ConcurrencyConflict:
                self._live.pop(run_id, None)
                continue
            except BaseException:
                self._live.pop(run_id, None)
                raise
            _remove_released(run)
            return response(run, everything=everything)
        raise ConcurrencyConflict(f"run {run_id} kept changing; gave up after {MAX_REPLAYS} replays",
                                  run_id=run_id)

    def _unchanged(self, run_id: str, version: Any) -> bool:
        return self.store.current_version(run_id) == version

    def _record_merges(self, run_id: str, watch: fanout.MergeWatch | None) -> None:
        """Record in the audit the patches ``watch`` saw merged by tries of a transition that
        ended refused (the run was cancelled or ended while it merged): they are in the index."""
        if watch is not None and watch.applied:
            self._transact(run_id, watch.record)

    def _report(self, run_id: str, step_id: str, result: Any, token: Any, failure: Any,
                usage: Any) -> dict[str, Any]:
        """Settle one result as its own transaction. A result the run no longer takes because it
        ended meanwhile is refused as before, after what it spent is recorded (see
        :func:`~lockgate.engine.results.late_spend`)."""
        try:
            self._park(run_id, step_id, result, token, failure, usage)
            return self._transact(run_id, lambda run: _settled(_step_done, run, step_id, result, token, failure,
                                                               usage))
        except UnstorableValue as exc:  # nothing was written: the attempt fails on what it sent
            rejected = unstorable(str(exc), result)
            return self._transact(run_id, lambda run: _settled(_step_done, run, step_id, None, token, None, usage,
                                                               rejected))
        except EngineError as refused:
            if refused.error_type != "run_finished" or not usage:
                raise
            try:
                self._transact(run_id, lambda run: late_spend(run, step_id, token, usage))
            except EngineError:
                pass  # nothing to record: the refusal stands alone
            raise refused from None

    def _park(self, run_id: str, step_id: str, result: Any, token: Any, failure: Any, usage: Any) -> None:
        """When the run's spec may ask a judge, hold the result on its step first, in a
        transaction of its own (:func:`~lockgate.engine.results.park`): the one that checks it
        may wait long for a verdict (under a runner it is even abandoned while the judge is
        asked), and a crash meanwhile must not lose the agent's work. Once per report: a replay
        of the call finds it parked. So is the report of an item of an engine-dispatch
        ``isolation: worktree`` fanout: its transaction may merge (pre_merge commands may run
        long), and the agent's work, left in a worktree it may not redo, must survive a crash."""
        run = self._get(run_id)
        judged = bool(run.cspec.judges) and self.judge is not None  # no judge: a judged ensure fails at once
        if not judged and not (run.cspec.worktree_merges and _worktree_item(run, step_id)):
            return
        record = parked(token, result, failure, usage)
        st = run.steps.get(step_id)
        if st is None or st.parked != record:
            self._transact(run_id, lambda live: park(live, step_id, record))

    def _park_decision(self, run_id: str, step_id: str, outcome: Any, rationale: Any, resolved_by: Any,
                       token: Any, via: str | None = None) -> dict[str, Any] | None:
        """:meth:`_park` for a gate decision: the transition applying it may reach a judged
        ensure (a ``set`` step after the gate, a revise's region), so it is held on the gate
        first and a crash while the judge answers does not lose what a person decided. The
        record held by this call, if any: a decision the gate refuses is not held (its own
        transaction then says why), nor one made when another is held for the round already
        (that one stands: see :func:`lockgate.engine.gates.gate_resolve`)."""
        run = self._get(run_id)
        st = run.steps.get(step_id)
        if (not run.cspec.judges or self.judge is None or st is None or not isinstance(outcome, str)
                or outcome not in DECISIONS or not isinstance(token, str)):
            return None
        record = parked_decision(token, DECISIONS[outcome], rationale, resolved_by, via)
        if st.parked != record:
            try:
                self._transact(run_id, lambda live: park(live, step_id, record, gate=True))
            except EngineError:
                return None
        st = self._get(run_id).steps.get(step_id)
        return record if st is not None and st.parked == record else None

    def _drive(self, run_id: str, out: dict[str, Any], everything: bool = False) -> dict[str, Any]:
        """The call's response, saying who drives the run when another live process does
        (:meth:`_driven_by`), once the work its transaction started that the engine does itself
        is done (:meth:`_done_here`)."""
        return self._driven_by(run_id, self._done_here(run_id, out, everything))

    def _done_here(self, run_id: str, out: dict[str, Any], everything: bool = False) -> dict[str, Any]:
        """Finish the work the call's transaction started that the engine does itself: evaluate
        commands (:meth:`_evaluations`) and, with a dispatcher, outstanding engine-dispatch
        fanout items (a batch at a time, concurrently), settling each result as its own
        transaction."""
        if "evaluate" in out:
            out = self._evaluations(run_id, out, everything)
        if self.dispatcher is None:
            return out
        while True:
            run = self._get(run_id)
            if run.header.status != RUN_RUNNING:
                return out
            keys = [k for k in run.outstanding if _engine_item(run, k)]
            if not keys:
                return out
            entries = [dispatch_entry(run, k) for k in keys]
            results = _reported_or_run(self.dispatcher, run_id, entries)
            for entry, (output, failure, usage) in zip(entries, results):
                try:
                    out = self._evaluations(run_id, self._report(run_id, entry["step_id"], output, entry["token"],
                                                                 failure, usage))
                except EngineError:
                    continue

    def _evaluations(self, run_id: str, out: dict[str, Any], everything: bool = False) -> dict[str, Any]:
        """Run the evaluate commands ``out``'s call started, each once the transaction that
        started it has committed and outside any, and settle each in a transaction of its own
        (which may start more) until none is left; the answer reports what the whole chain did
        (every dispatch it issued, its last failure). A call made in a deferred block leaves them
        to its caller (unless a dispatcher drives the call: it needs this engine's answers), and
        a run another live process drives leaves them to that driver
        (see :mod:`lockgate.engine.commands`)."""
        if not out.get("evaluate") or (evaluate.is_deferred() and self.dispatcher is None):
            return out
        reported = [self._get(run_id).report()]  # the call's own, before the claim's transaction
        last = self._commands.run_all(run_id, list(out["evaluate"]),
                                      partial(self._run_commands, run_id, reported, everything))
        out = last or out
        out.pop("evaluate", None)
        return out

    def _run_commands(self, run_id: str, reported: list[Report], everything: bool,
                      calls: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Run ``calls`` and the commands their answers start, each settled in a transaction of
        its own answering also for what the call reported before (``reported[0]``, kept up to
        date); the last response, None when none ran."""
        queue, started, out = list(calls), set(), None
        while queue:
            call = queue.pop(0)
            run = self._get(run_id)  # cached, unless a call made while a command ran dropped it
            if call["token"] in started or call["token"] in self._commands.running \
                    or not evaluate.runs_under(run, call["step_id"], call["token"]):
                continue  # run already, running in another call, or the run or the step moved on
            started.add(call["token"])
            # running here until its answer is settled (a judge may be asked first, the lock of
            # a server left meanwhile): a resume or another call must not start it again
            self._commands.running.add(call["token"])
            try:
                answer = self._command(run_id, call)
                settle = _reporting(reported[0], evaluate.settle)
                out = settle_here(partial(self._transact, run_id, partial(
                    _settled, settle, key=call["step_id"], token=call["token"], answer=answer), everything))
            except EngineError as refused:  # cancelled, or resumed elsewhere, meanwhile
                if refused.error_type not in ("stale_token", "run_cancelled", "run_finished"):
                    raise
                return self.status(run_id)
            finally:
                self._commands.running.discard(call["token"])
            queue.extend(out.get("evaluate") or ())
            reported[0] = self._get(run_id).report()
        return out

    def _command(self, run_id: str, call: dict[str, Any]) -> Evaluated:
        """The answer of one evaluate command, run here (outside any transaction)."""
        with self.around_commands(call):
            return self._commands.run_one(self.evaluator or _no_evaluator, run_id, call)


def _no_context(call: Mapping[str, Any]) -> AbstractContextManager[None]:
    return nullcontext()


def _settled(transition: Callable[..., None], run: LiveRun, *args: Any, **kwargs: Any) -> None:
    """Apply a transition, then advance whatever it released."""
    transition(run, *args, **kwargs)
    advance(run)


def _reporting(so_far: Report, transition: Callable[..., None]) -> Callable[..., None]:
    """``transition``, answering also for what the earlier transactions of its call reported."""
    def apply(run: LiveRun, *args: Any, **kwargs: Any) -> None:
        run.report_also(so_far)
        transition(run, *args, **kwargs)

    return apply


def _remove_released(run: LiveRun) -> None:
    """Remove the git worktrees the transaction just committed let go (LiveRun.release_worktrees)."""
    if run.to_release:
        worktrees.release(run.workspace(), run.to_release)
        run.to_release = []


def _no_evaluator(*args: Any) -> Any:
    raise EngineError(evaluate.NO_RUNNER, error_type="no_evaluator")


def load_live(store: Any, run_id: str, env: Env) -> LiveRun:
    """Rebuild a live run from the store alone, checking the stored spec's digest and the shape
    of its records (see :func:`lockgate.engine.live.load`)."""
    return live.load(store.load_run(run_id), env)


def _how_it_ended(status: dict[str, Any]) -> str | None:
    """How a run whose response is ``status`` ended, in words ("was cancelled", "failed
    (budget_exceeded)"); None while it runs."""
    return {"complete": "is complete", "cancelled": "was cancelled", "killed": "was killed",
            "error": f"failed ({status.get('error_type')})"}.get(status["status"])


def _coerce_spec(spec: Spec | str | Path) -> Spec:
    if isinstance(spec, Spec):
        return spec
    from ..dsl.loader import load, load_file

    if isinstance(spec, Path) or (isinstance(spec, str) and "\n" not in spec and spec.endswith((".yaml", ".yml"))):
        path = Path(spec)
        try:  # bytes: the loader reports text that is not UTF-8 as a diagnostic
            result = load_file(path)
        except FileNotFoundError as exc:
            raise SpecError(f"no such file: {path}") from exc
        except OSError as exc:
            raise SpecError(f"cannot read spec {path}: {exc}") from exc
    elif isinstance(spec, str):
        result = load(spec)
    else:
        raise SpecError(f"a spec is a Spec, its text or a path, not {type(spec).__name__}")
    return loaded_spec(result)


def loaded_spec(result: Any) -> Spec:
    """The Spec of a LoadResult; SpecError with its diagnostics when the document has errors."""
    if result.spec is not None:
        return result.spec
    errors = list(getattr(result, "errors", []))
    if len(errors) == 1:
        raise SpecError(f"the spec is invalid: {errors[0].message}", result.diagnostics)
    first = f"; the first: {errors[0].message}" if errors else ""
    raise SpecError(f"the spec is invalid ({len(errors)} errors){first}", result.diagnostics)


def _step_id(step_id: Any) -> str:
    """``step_id``, if it is a string (EngineError ``invalid_arguments`` otherwise)."""
    if not isinstance(step_id, str):
        raise EngineError(f"a step id is a string, not {type(step_id).__name__}: {step_id!r:.200}",
                          error_type="invalid_arguments")
    return step_id


def _storable_text(text: str) -> str:
    """``text`` cut to :data:`MAX_CANCEL_REASON` characters, with what no store keeps (U+0000, a
    lone surrogate) replaced by U+FFFD: a reason must not stop a cancel."""
    return mend_unstorable(text[:MAX_CANCEL_REASON])


def check_inputs(spec: Spec | str | Path, inputs: Mapping[str, Any] | None, flow: str | None = None) -> dict[str, Any]:
    """The check :meth:`Engine.plan` makes of ``inputs`` before it stores anything, for callers
    that start a run later (a notebook run's task) and must refuse bad inputs now: a copy of
    ``inputs``, or the same InputValidationError (or EngineError for an unknown flow)."""
    _, cspec, name = _compiled_flow(spec, flow)
    return _check_inputs(cspec, name, inputs)


def _compiled_flow(spec: Spec | str | Path, flow: str | None) -> tuple[Any, CompiledSpec, str]:
    """(the spec's stored data, its compiled form, the flow's name: ``flow`` or the entry)."""
    spec_obj = _coerce_spec(spec)
    data, text = spec_data(spec_obj)
    cspec = compiled(spec_obj, data, text)
    name = flow or spec_obj.entry
    if name not in cspec.flows:
        raise EngineError(f"the spec has no flow {name!r}", error_type="unknown_flow", flows=sorted(cspec.flows))
    return data, cspec, name


def _check_inputs(cspec: CompiledSpec, flow: str, inputs: Any) -> Any:
    inputs = {} if inputs is None else inputs
    if not isinstance(inputs, Mapping):
        raise InputValidationError("flow inputs must be an object", violations=[
            {"code": "INPUT_CONTRACT_INVALID", "path": "input", "message": "expected an object"}])
    inputs = dict(inputs)
    violations = cspec.input_contract(flow).check(inputs, "input")
    if violations:
        items = [{"code": "INPUT_CONTRACT_INVALID", "path": v.path, "message": v.message}
                 for v in violations]
        summary = "; ".join(f"{i['path']}: {i['message']}" for i in items[:5])
        raise InputValidationError(f"inputs do not match flow {flow!r}: {summary}", violations=items)
    return inputs


def _engine_item(run: LiveRun, key: str) -> bool:
    loc = run.locate(key)
    fan = loc.cstep.step.fanout
    return loc.index is not None and fan is not None and fan.dispatch != "consumer"


def _worktree_item(run: LiveRun, key: str) -> bool:
    """Whether ``key`` names an item of an engine-dispatch ``isolation: worktree`` fanout."""
    try:
        loc = run.locate(key)
    except (KeyError, ValueError):
        return False  # not a step of the run: its own transaction refuses the report
    return loc.index is not None and fanout.engine_worktree(loc)


def _reported_or_run(dispatcher: Any, run_id: str, entries: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    """(output, failure, usage) per entry: a result held while a judge was asked (``reported``)
    as it was reported, the others from the dispatcher (see :func:`_run_batch`)."""
    ran = iter(_run_batch(dispatcher, run_id, [e for e in entries if "reported" not in e]))
    return [(e["reported"].get("result"), e["reported"].get("failure"), e["reported"].get("usage"))
            if "reported" in e else next(ran) for e in entries]


def _run_batch(dispatcher: Any, run_id: str, entries: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    """Call the dispatcher for each entry concurrently; (output, failure, usage) per entry."""

    async def one(entry: dict[str, Any]) -> tuple[Any, Any, Any]:
        started = time.perf_counter()
        try:
            value = dispatcher.execute(_task(run_id, entry)) if hasattr(dispatcher, "execute") else dispatcher(entry)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:  # an agent is foreign code: its failure is the attempt's failure
            value = AgentResult.failed(describe_exception(exc))
        result = _as_result(value).with_duration((time.perf_counter() - started) * 1000)
        return result.output, result.failure, result.spend() or None  # its measured time included

    import asyncio  # here, not at import: ``from lockgate import Engine`` stays light
    import time

    from .agents.base import AgentResult, describe_exception

    async def batch() -> list[tuple[Any, Any, Any]]:
        return list(await asyncio.gather(*(one(e) for e in entries)))

    from .ensures import call_sync

    return call_sync(batch)


def _as_result(value: Any) -> Any:
    """A dispatcher's answer as an AgentResult: one already, one in all but its class (``output``,
    ``failure`` and perhaps ``usage`` with ``to_json()``), or the output itself."""
    from .agents.base import AgentResult, Usage

    if isinstance(value, AgentResult):
        return value
    if not (hasattr(value, "failure") and hasattr(value, "output")):
        return AgentResult.success(value)
    usage = value.usage.to_json() if hasattr(value, "usage") else {}
    spent = Usage(tokens=usage.get("tokens") or 0, usd=usage.get("usd") or 0.0, ms=usage.get("ms"))
    return AgentResult(value.output, value.failure, spent)


def _task(run_id: str, entry: dict[str, Any]) -> Any:
    from .agents.base import Task

    failure = entry.get("previous_failure") or {}
    return Task(run_id=run_id, step_id=entry["step_id"], prompt=entry["task"] or "", agent=entry["agent"],
                attempt=entry["attempt"], previous_failure=failure.get("reason"),
                violations=tuple(failure.get("violations", ())), contract=entry["output_contract"],
                schema=entry["output_schema"], cwd=entry.get("cwd"), inputs=entry.get("inputs") or {})


#: How many running runs :meth:`Engine.pending_gates` lists at first (then four times as many).
RUNS_BATCH = 100


def _running_runs(store: Any) -> Iterator[Any]:
    """The store's running runs, newest first, each once. The store lists a status with a
    limit (no offset), so the list is asked for again, four times longer, while it comes back
    full."""
    seen: set[str] = set()
    batch = RUNS_BATCH
    while True:
        listed = store.list_runs(status=RUN_RUNNING, limit=batch)
        for summary in listed:
            if summary.run_id not in seen:
                seen.add(summary.run_id)
                yield summary
        if len(listed) < batch:
            return
        batch *= 4


def _at_gate(store: Any, run_id: str) -> bool:
    """Whether a gate of run ``run_id`` waits for a decision, by its stored records (a run is
    rebuilt, its spec compiled, only when one does)."""
    return any(isinstance(record, dict) and record.get("status") == WAITING_GATE and not record.get("dropped")
               for record in store.load_run(run_id).steps.values())
