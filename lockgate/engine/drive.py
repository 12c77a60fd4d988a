"""Driving one run: the consumer protocol spoken with agents and a gate channel, on asyncio.

A :class:`Drive` starts every ready ``do`` step and fanout item through its agent concurrently
(within the run's :class:`~lockgate.engine.admission.Admission` limits), reports each result with
``step_done``, asks the :class:`~lockgate.engine.gatechannel.GateChannel` about waiting gates, and
ends with a :class:`RunResult` when the run is complete, failed, killed or cancelled, or when it
only waits at gates nobody answered. The :class:`~lockgate.engine.runner.Runner` owns what lasts
across runs (agents, the judge); this module owns the state of one run in flight, so the loop,
its tasks and its shutdown read together.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import (
    ConcurrencyConflict,
    DrivenElsewhere,
    EngineError,
    RunnerError,
    StaleToken,
    TakenOver,
)
from .admission import Admission, OutstandingLimit, too_many, where_to_raise
from .agents.base import AgentResult, timed_execute
from .dispatches import (
    DISPATCH_STATUSES,
    dispatch_entries,
    dispatch_task,
    emit_evaluated,
    emit_outcome,
    reported_result,
    stage_data,
    usage_of,
)
from .drivers import RENEW_S, Driver, give_up
from .evaluate import NO_RUNNER, evaluate_async, left_behind
from .gatechannel import Decision, GateRequest, offered
from .model import RUNNING
from .progress import Emitter, ProgressEvent, log

if TYPE_CHECKING:
    from .runner import Runner

TERMINAL = ("complete", "error", "killed", "cancelled")
#: Seconds a drive waits for a store change at a time while another process runs the commands
#: of the run's evaluate steps (bounded: a worker thread blocked in the store cannot be cancelled).
ELSEWHERE_POLL_S = 1.0
#: Seconds between a drive's checks for its run ended by another process (see Drive._watch).
WATCH_S = 1.0
_WAKE: Any = {"status": "__wake__"}  # a gate was left waiting: re-check whether work remains
_WITHDRAWN: Any = object()  # an agent call or command stopped for its withdrawn issuance


def _emit_round(emit: Emitter, run_id: str, entry: dict[str, Any], response: dict[str, Any]) -> bool:
    """Tell observers that the round of an ``iterate`` step just reported ended with its
    ``until`` not holding yet (the response says so in ``iterated`` and dispatches the next
    round): the step goes round again, nothing failed. False for any other response, which
    :func:`~lockgate.engine.dispatches.emit_outcome` tells."""
    done = response.get("iterated")
    step_id = entry["step_id"]
    if not isinstance(done, dict) or done.get("step_id") != step_id:
        return False
    attempt = response.get("attempt") if response.get("step_id") == step_id else None
    until = f": until {done['until']!r} does not hold yet" if done.get("until") else ""
    emit("step_retrying", run_id, step_id=step_id, attempt=int(attempt or int(entry.get("attempt") or 1) + 1),
         agent=entry.get("agent"), message=f"round {done.get('round')} of {done.get('max')} done{until}")
    return True


class _Withdrawn(Exception):
    """A call admitted after a wait found its issuance withdrawn: it starts nothing."""

CONFLICT_RETRIES = 5


@dataclass(repr=False)
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

    def __repr__(self) -> str:
        # Short on purpose: the response and the events grow with the run (a 1,000-step run's
        # full repr is megabytes, and asyncio.run formats it once when it restores SIGINT).
        gates = f", waiting_gates={len(self.waiting_gates)}" if self.waiting_gates else ""
        return (f"RunResult(run_id={self.run_id!r}, status={self.status!r}{gates}, "
                f"events={len(self.events)})")


#: Refusals of a result or decision because the run ended meanwhile (cancelled, killed or failed
#: by another process): the drive goes on from the stored state, which ends it.
ENDED_ELSEWHERE = frozenset({"run_cancelled", "run_finished"})
#: Refusals of a gate decision that change nothing and leave the gate waiting on the same token,
#: the decision being one the gate cannot take now: a revise of a gate with no ``on_revise``
#: target, or one whose carry ``on_revise`` value cannot be resolved (semantics §6.7 step 3).
KEPT_WAITING = frozenset({"revise_unavailable", "carry_revise_unresolved"})


class Drive:
    """The state of one run being driven: agent calls and gate questions in flight."""

    def __init__(self, runner: Runner, response: dict[str, Any], driver: Driver | None = None) -> None:
        """``driver``: this drive's claim on the run, renewed while it drives and given up when
        it stops with the run still going (see :mod:`lockgate.engine.drivers`)."""
        self.runner = runner
        self.driver = driver
        self.engine = runner.engine
        self.emit = Emitter(runner.on_event)
        self.watch_store = runner.on_event is not None
        self.first = response
        self.run_id = str(response.get("run_id", ""))
        if self.run_id:
            runner.run_ids.append(self.run_id)
        self.admission = Admission(runner.settings)
        self.calls: dict[str, asyncio.Task[None]] = {}     # dispatch token -> agent call or command
        # dispatch token -> (its step, the task of its call) from the moment its call waits for a
        # slot until its answer is settled (a judge's verdict on it included)
        self.executing: dict[str, tuple[str, asyncio.Task[Any]]] = {}
        self.withdrawn: set[str] = set()                    # tokens whose call the watch cancelled
        self.asks: dict[str, asyncio.Task[None]] = {}      # gate token -> gate question
        self.unanswered: dict[str, dict[str, Any]] = {}    # gate token -> gate left waiting
        self.refused: dict[str, dict[str, Any]] = {}       # gate token -> its decision last refused
        self.finished: set[str] = set()                     # tokens already reported
        self.stale: list[str] = []                          # steps whose result came too late
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.stopping = False  # set when the run is being stopped: answers start nothing more
        #: the first step not started for the outstanding limit: then nothing more starts, and
        #: the drive stops leaving the run resumable once the calls in flight have ended
        self.held: str | None = None
        self.seen_seq = self._last_seq()
        self.newest = response

    async def drive(self) -> RunResult:
        if self.first.get("status") == "error" and not self.run_id:
            return self._finish(self.first)
        watch = asyncio.ensure_future(self._watch())
        try:
            return await self._loop(self.first)
        except asyncio.CancelledError:
            self._say_stopping()
            await self._stop_all()
            self._cancel_run()
            raise
        except BaseException:
            self._say_stopping()
            await self._stop_all()
            raise
        finally:
            watch.cancel()
            self._release()

    async def _watch(self) -> None:
        """Every :data:`WATCH_S` seconds, look at what other processes did to the run. One that
        ended it (``lockgate cancel`` in another terminal): the drive stops its agent calls and
        commands at once, rather than when each one ends on its own and its answer is refused.
        One that withdrew the issuance of some of them (``lockgate revert``): the drive stops
        those (:meth:`_stop_withdrawn`). One that decided a gate: the drive starts the work the
        decision released, rather than once its own calls in flight have ended."""
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(WATCH_S)
            try:
                response = self.engine.status(self.run_id)  # rereads the run only if someone else wrote it
                if response.get("status") in TERMINAL:
                    self.inbox.put_nowait(self._note(response))
                    return
                self._stop_withdrawn()
                self._start_released(response)
                if self.driver is not None and time.monotonic() - renewed >= RENEW_S:
                    renewed = time.monotonic()
                    if not self.engine.renew(self.run_id, self.driver):
                        self.inbox.put_nowait(TakenOver(self.run_id, self._holder()))
                        return
            except Exception:  # noqa: BLE001 - the store is unreachable now: the drive's own calls will say so
                continue

    def _start_released(self, status: dict[str, Any]) -> None:
        """Start the dispatches ``status`` (the run as stored) lists that this drive has not,
        and, while it holds the run, the evaluate commands that run nowhere (a process that
        decides a gate of a run someone drives leaves them to the driver)."""
        if self.stopping or (self.driver is not None and not self._holds_claim()):
            return  # taken over: the work is the new driver's (this drive stops at its next answer)
        self._absorb(self._note(status))
        if self.driver is not None:
            self._schedule_evaluations(self.engine.evaluations(self.run_id))

    def _stop_withdrawn(self) -> None:
        """Stop the agent calls and commands in flight whose issuance the run as stored withdrew
        (a revert elsewhere issued their step again, a decision reset it, a take-over issued it
        anew): their answers would be refused, and the call of a new issuance would run beside
        them. In flight: waiting for a slot, running, or waiting for the judge's verdict on the
        answer. Only a drive holding a claim: one without learns from a refused answer that
        another process may drive the run (see :meth:`_settle`)."""
        if self.driver is None or self.stopping:
            return
        # one cancellation each: a second would cut short the first one's clean-up (a grace period)
        issued = {token: step_id for token, (step_id, _) in self.executing.items() if token not in self.withdrawn}
        if not issued:
            return
        for token in self.engine.withdrawn(self.run_id, issued):
            self.withdrawn.add(token)
            self.executing[token][1].cancel()

    async def _fenced(self, step_id: str, token: str, work: Awaitable[Any]) -> Any:
        """What ``work`` answers, or the run as stored (:meth:`_after_withdrawn`) when its
        issuance was withdrawn meanwhile (see :meth:`_unless_withdrawn`)."""
        outcome = await self._unless_withdrawn(step_id, token, work)
        return await self._after_withdrawn() if outcome is _WITHDRAWN else outcome

    async def _unless_withdrawn(self, step_id: str, token: str, work: Awaitable[Any]) -> Any:
        """What ``work`` (the agent call or command of issuance ``token`` of ``step_id``, from its
        wait for a slot until its answer is settled) answers, or :data:`_WITHDRAWN` when
        :meth:`_stop_withdrawn` stopped it (or, admitted, it found its issuance withdrawn). It is
        awaited in the call's own task (one more task would cost an instant agent's call a tenth
        of its time): the cancellation that stops it is always taken back here, however ``work``
        ends, so that it reaches nothing after it (going on from the run as stored); one from
        elsewhere (the run stopping) goes on."""
        task = asyncio.current_task()
        assert task is not None  # awaited in a call's task
        self.executing[token] = (step_id, task)
        try:
            return await work
        except _Withdrawn:
            return _WITHDRAWN
        except asyncio.CancelledError:
            if self._take_back(token, task) and not task.cancelling():
                return _WITHDRAWN
            raise
        finally:
            self.executing.pop(token, None)
            self._take_back(token, task)  # stopped, but ``work`` swallowed the cancellation

    @asynccontextmanager
    async def _slot(self, step_id: str, token: str) -> AsyncIterator[None]:
        """A slot under the run's limits for issuance ``token`` of ``step_id``; :class:`_Withdrawn`
        instead when it had to wait for one and the issuance was withdrawn meanwhile."""
        waited = self.admission.full()
        async with self.admission:
            if waited and self._withdrawn_now(step_id, token):
                raise _Withdrawn
            yield

    def _withdrawn_now(self, step_id: str, token: str) -> bool:
        """Whether the run as stored withdrew issuance ``token`` of ``step_id``: asked by a call
        that waited for a slot, once admitted, before it starts (the watch may not have looked
        since the issuance was withdrawn: a slot frees as soon as the call it stopped ends).
        Only a drive holding a claim, as :meth:`_stop_withdrawn`."""
        if self.driver is None or self.stopping:
            return False
        return bool(self.engine.withdrawn(self.run_id, {token: step_id}))

    def _take_back(self, token: str, task: asyncio.Task[Any]) -> bool:
        """Take back, once, the cancellation :meth:`_stop_withdrawn` made of ``task`` for
        ``token``; whether it had made one."""
        if token not in self.withdrawn:
            return False
        self.withdrawn.discard(token)
        task.uncancel()
        return True

    async def _after_withdrawn(self) -> dict[str, Any]:
        """The run as stored, to go on from, once a call was stopped for its withdrawn issuance:
        where its answer, refused as stale, would have led this drive (see :meth:`_settle`)."""
        self._still_driving()
        return await self._engine_call(self.engine.status, self.run_id)

    def _holds_claim(self) -> bool:
        return self.driver is not None and self.engine.holds(self.run_id, self.driver)

    async def _let_go(self) -> dict[str, Any] | None:
        """Before a drive holding the run ends with nothing in flight, it gives up its claim in
        one transaction with a look at the run (:meth:`Engine.let_go`): the run as stored when
        a decision made elsewhere released work left to this drive (the drive goes on with it)
        or ended the run; None once the claim is given up."""
        if self.stale or self.driver is None or not self._holds_claim():
            return None
        return await self._engine_call(self.engine.let_go, self.run_id, self.driver)

    def _still_driving(self) -> None:
        """Raise TakenOver when this drive's claim is no longer the run's: an answer of its own
        went stale because another process took the run over (not because of a reset made
        elsewhere), and following the stored run would call its agents twice. That holds even
        when the process that took it over has died since: a resume, not this drive, goes on."""
        if self.driver is None:
            return
        if not self._holds_claim():
            raise TakenOver(self.run_id, self._holder())

    def _holder(self) -> str:
        """Who claimed the run last, for a person: "process 812 on host h (...)"."""
        try:
            claim = self.engine.claim_of(self.run_id)
        except Exception:  # noqa: BLE001 - only a description is lost
            claim = None
        return claim.describe() if claim is not None else "another process"

    def _say_stopping(self) -> None:
        """Mark this drive's claim stopping before its calls are stopped (which may take their
        grace period): a process deciding meanwhile elsewhere then waits for the claim to be
        given up and runs the commands its decision starts itself, rather than leave them to
        this drive, which starts nothing more. Other drives stay out until then (the agents may
        still be running)."""
        if self.driver is not None and self.run_id:
            with suppress(Exception):  # best effort: the decider then leaves them, as before
                self.engine.stopping(self.run_id, self.driver)

    def _release(self) -> None:
        """Give up this drive's claim when the run goes on without it (a run that ended needs
        none; a claim left behind would only make the next resume here wait for nothing)."""
        driver, self.driver = self.driver, None
        if driver is not None:
            give_up(self.engine, self.run_id, driver, write=self.newest.get("status") not in TERMINAL)

    async def _loop(self, response: dict[str, Any]) -> RunResult:
        """Every response's new dispatches are started as soon as it arrives (by the call or gate
        that got it: :meth:`_absorb`); this loop wakes only when the run may be over (a
        terminal response, nothing left in flight) or something failed. Whether the run is
        over, and which gates wait, is read from the newest response (engine calls are
        serialised on the loop, so the newest one describes the current state)."""
        self.newest = response
        while True:
            self._tail_store_events()
            current = self.newest
            if current.get("status") in TERMINAL:
                await self._stop_all()
                return self._finish(current)
            self._schedule(response, current)
            if self.held is not None and not self.calls and self.inbox.empty():
                raise self._outstanding_limit()
            if not self.calls and not self.asks and self.inbox.empty():
                # commands running that this drive did not start: a drive holding the run runs
                # them (a decision made elsewhere left them to it); one without waits for them,
                # unless only gates nobody answers here would remain
                if current.get("evaluating") and (self._holds_claim() or not self.unanswered):
                    response = await self._elsewhere(current)
                    continue
                released = await self._let_go()
                if released is not None:
                    response = released
                    continue
                return self._idle_end(current)
            response = await self._next_response()

    def _absorb(self, response: dict[str, Any]) -> None:
        """Act on a response as it arrives: start its new dispatches and the newest response's,
        ask about waiting gates; a terminal one goes to the loop, which ends the run."""
        self._tail_store_events()
        current = self.newest
        if current.get("status") in TERMINAL:
            self.inbox.put_nowait(response)
        else:
            self._schedule(response, current)

    def _schedule(self, response: dict[str, Any], current: dict[str, Any]) -> None:
        """Start the new dispatches of the response just received and of the newest one, and
        ask about the gates the newest one has waiting."""
        for answer in (response, current) if response is not current else (current,):
            if answer.get("status") in DISPATCH_STATUSES:
                self._schedule_dispatches(answer)
            if answer.get("evaluate"):
                self._schedule_evaluations(answer["evaluate"])
        self._schedule_gates(current)

    def _idle_end(self, current: dict[str, Any]) -> RunResult:
        """Nothing is in flight: another process changed work this drive had in flight (it
        may be driving the run: DrivenElsewhere), the run waits at gates nobody answered, or
        the engine left it with nothing to do (a RunnerError)."""
        if self.stale:
            raise DrivenElsewhere(self.run_id, self.stale[0])
        if self.unanswered:
            refused = [self.refused[t] for t in self.unanswered if t in self.refused]
            return self._finish({**current, "status": "await_gate", **({"refused": refused} if refused else {})})
        raise RunnerError(f"run {self.run_id}: the engine answered "
                          f"{current.get('status')!r} with no work to do and no gate "
                          "waiting")

    async def _next_response(self) -> dict[str, Any]:
        """The next engine response from a finished call or gate; a gate left unanswered only
        wakes the loop to re-check whether any work remains."""
        while True:
            item = await self.inbox.get()
            if isinstance(item, BaseException):
                raise item
            if item is not _WAKE:
                return item
            if self._drained():
                return self.newest

    @staticmethod
    async def _answer(work: Awaitable[Any]) -> Any:
        """What ``work`` answers, or the exception it raised. Cancelling this task propagates; a
        CancelledError raised while nobody cancels it (an agent or gate channel awaited something
        cancelled elsewhere) is a failure like any other."""
        try:
            return await work
        except asyncio.CancelledError as exc:
            current = asyncio.current_task()
            if current is None or current.cancelling():
                raise
            return RunnerError(f"an agent call or gate question was cancelled from outside the run: {exc!r}")
        except BaseException as exc:
            return exc

    def _deliver(self, answer: Any) -> None:
        """Act on the answer of a call or gate question that is no longer in flight: a response
        at once (:meth:`_absorb`), a failure or a gate's wake-up through the loop's inbox (None
        is nothing). When nothing is left in flight, wake the loop to see whether the run is
        over. Once the run is stopping, answers start nothing more."""
        if self.stopping:
            return
        if answer is _WAKE or isinstance(answer, BaseException):
            self.inbox.put_nowait(answer)
        elif answer is not None:
            try:
                self._absorb(answer)
            except Exception as exc:  # e.g. the store failed: the loop raises it
                self.inbox.put_nowait(exc)
        if self._drained():
            self.inbox.put_nowait(_WAKE)

    def _drained(self) -> bool:
        """Whether the loop should look at the run again: nothing left in flight, or no agent
        call or command left once the outstanding limit held work back (a gate question is no
        reason to stay: the gate waits for a decision in the store all the same)."""
        return not self.calls and (not self.asks or self.held is not None)

    def _admit(self, step_id: str) -> bool:
        """Reserve a place for ``step_id``'s call under ``max_outstanding``; False once one was
        refused (:attr:`held`): the drive starts nothing more, lets its calls in flight end and
        report (nothing done is lost), then stops leaving the run resumable."""
        if self.held is None and self.admission.reserve():
            return True
        self.held = self.held or step_id
        return False

    def _outstanding_limit(self) -> OutstandingLimit:
        """The error the drive stops with after :meth:`_admit` refused a call: what was held back,
        and how to go on (raise the limit, then resume the run, which starts the same work)."""
        settings = self.runner.settings
        stopped = (f"run {self.run_id}: starting {self.held!r} would make {too_many(settings)}, so no more were "
                   "started; the run is left as it was, resumable, with what was done kept. To go on, "
                   f"{where_to_raise(settings, self.runner.config.path)}")
        return OutstandingLimit(f"{stopped}, then: {self.runner.resume_hint(self.run_id)}", run_id=self.run_id,
                                stopped=stopped)

    # --- agent calls ---------------------------------------------------------------------------

    def _schedule_dispatches(self, response: dict[str, Any]) -> None:
        for entry in dispatch_entries(response):
            token = entry.get("token")
            if not token or token in self.calls or token in self.finished or not self._admit(entry["step_id"]):
                continue
            self.calls[token] = asyncio.ensure_future(self._call(token, partial(self._dispatch, entry), admitted=True))

    async def _call(self, token: str, work: Callable[[], Awaitable[Any]], *, admitted: bool = False) -> None:
        """Await one agent call or command, ``work()`` (in ``calls`` under its token until it
        ends), then act on its answer; ``admitted``: it holds a place reserved in the run's
        admission."""
        try:
            answer = await self._answer(work())
        finally:
            if admitted:
                self.admission.release()
            self.finished.add(token)
            self.calls.pop(token, None)
        self._deliver(answer)

    async def _dispatch(self, entry: dict[str, Any]) -> dict[str, Any] | None:
        """Execute ``entry`` once admitted, then report its result (:meth:`_carry_out`); the
        run as stored when its issuance was withdrawn meanwhile, whether it waited for a slot,
        ran its agent or waited for the judge's verdict on its result."""
        return await self._fenced(entry["step_id"], entry["token"], self._carry_out(entry))

    async def _carry_out(self, entry: dict[str, Any]) -> Any:
        """Execute ``entry`` once admitted and report its result; a result reported before
        (held while a judge was asked, then the process stopped: ``reported``) is reported
        again without asking the agent again."""
        reported = entry.get("reported")
        if reported is not None:
            return await self._report(entry, reported_result(reported))
        async with self._slot(entry["step_id"], entry["token"]):
            result = await self._execute(entry)
        return await self._report(entry, result)

    async def _execute(self, entry: dict[str, Any]) -> AgentResult:
        name = entry.get("agent") or "claude"
        agent = self.runner.agent(name)
        task = dispatch_task(entry, run_id=self.run_id, agent=name, workspace=self.runner.workspace)
        self.emit("step_started", self.run_id, step_id=task.step_id, attempt=task.attempt,
                  agent=name, data=stage_data(entry))
        with self.runner.calling(agent, self.run_id):
            return await timed_execute(agent, task)

    async def _report(self, entry: dict[str, Any], result: AgentResult) -> dict[str, Any] | None:
        """``step_done`` for one result; None when the dispatch went stale meanwhile."""
        step_id = entry["step_id"]
        response, applied = await self._settle(
            step_id, self.engine.step_done, result.output if result.ok else None, entry["token"],
            failure=None if result.ok else result.failure, usage=usage_of(result), judging=step_id,
            cwd=entry.get("cwd"))
        if applied and not _emit_round(self.emit, self.run_id, entry, response):
            emit_outcome(self.emit, self.run_id, entry, result, response)
        return response

    async def _settle(self, step_id: str, method: Any, *args: Any, **kwargs: Any) -> tuple[Any, bool]:
        """(the response, True) of the engine ``method`` settling an answer about ``step_id``;
        (None, False) when its issuance went stale meanwhile, and the drive goes on from the run
        as stored: this drive holds the run's claim (no other drive calls its agents: the step
        was reset by a decision made elsewhere — then it may even wait for its dependencies
        again, refused as ``not_awaiting`` — or answered by a consumer such as an MCP client),
        or a command's step is no longer running (reset, or closed by this drive's own
        transition). Without a claim, a result answered or a command started again elsewhere
        means another process may be driving the run: noted in ``stale``, which ends this drive
        once nothing else is in flight. (the run's status, False) when the run ended elsewhere."""
        try:
            return await self._engine_call(method, self.run_id, step_id, *args, **kwargs), True
        except StaleToken as stale:
            if self.driver is not None or (method == self.engine.evaluated
                                           and stale.detail.get("step_status") != RUNNING):
                self._still_driving()
                await self._engine_call(self.engine.status, self.run_id)
            else:
                self.stale.append(step_id)
            return None, False
        except EngineError as exc:
            if exc.error_type == "not_awaiting" and self.driver is not None:  # reset meanwhile, now pending
                self._still_driving()
                await self._engine_call(self.engine.status, self.run_id)
                return None, False
            if exc.error_type not in ENDED_ELSEWHERE:
                raise
            return await self._engine_call(self.engine.status, self.run_id), False

    # --- evaluate commands ---------------------------------------------------------------------

    def _schedule_evaluations(self, calls: list[dict[str, Any]]) -> None:
        """Run the evaluate commands the engine left to this drive (a response's ``evaluate``),
        each as a task beside the agent calls, within the same limits."""
        for call in calls:
            token = call["token"]
            if token not in self.calls and token not in self.finished and self._admit(call["step_id"]):
                self.calls[token] = asyncio.ensure_future(self._call(token, partial(self._evaluate, call),
                                                                     admitted=True))

    async def _evaluate(self, call: dict[str, Any]) -> dict[str, Any] | None:
        """Run one command, then settle its answer; None when the step was started again
        elsewhere meanwhile (a resume: the new run of the command answers)."""
        step_id = call["step_id"]
        self.emit("step_started", self.run_id, step_id=step_id, message=call["command"],
                  data={"kind": "evaluate"})
        return await self._fenced(step_id, call["token"], self._command(call))

    async def _command(self, call: dict[str, Any]) -> Any:
        """Run ``call``'s command once admitted, then settle its answer (see :meth:`_carry_out`)."""
        step_id, token = call["step_id"], call["token"]
        async with self._slot(step_id, token):
            answer = await evaluate_async(self.engine.evaluator or _no_evaluator, call)
        response, applied = await self._settle(step_id, self.engine.evaluated, token, answer)
        if applied:
            emit_evaluated(self.emit, self.run_id, call, answer, response)
        return response

    async def _elsewhere(self, current: dict[str, Any]) -> dict[str, Any]:
        """The run's response once it changed: only evaluate commands this drive did not start
        are running. A drive that holds the run's claim runs them: a process that decides a
        gate of a run someone drives leaves the commands its decision starts to the driver, so
        the drive resumes the run, which starts them again here. Without a claim, another
        process runs them (``lockgate gate approve`` in another terminal), and the drive waits
        for their answers through the store, unless they run past their timeout (and a grace):
        left by a process that is gone, they are started again here too. Those a call of this
        engine runs (a revert made through it beside this drive) are waited for the same way:
        a resume would leave them to that call, and the drive would resume again and again."""
        store = self.engine.store
        version = await asyncio.to_thread(store.current_version, self.run_id)
        response = await self._engine_call(self.engine.status, self.run_id)
        if (self.driver is not None and self.engine.evaluations(self.run_id)) or left_behind(response):
            return await self._engine_call(self.engine.resume, self.run_id)
        if response.get("evaluating") == current.get("evaluating"):
            await asyncio.to_thread(store.wait_for_change, self.run_id, version, ELSEWHERE_POLL_S)
            response = await self._engine_call(self.engine.status, self.run_id)
        return response

    # --- gates ---------------------------------------------------------------------------------

    def _schedule_gates(self, response: dict[str, Any]) -> None:
        gates = waiting_gates(response)
        self._forget_gone({g.get("token") for g in gates})
        if self.held is not None:  # stopping at the limit: a gate asked now would be left at once
            return
        for gate in gates:
            token = gate.get("token")
            if token and token not in self.asks and token not in self.unanswered:
                self._open_gate(token, gate)

    def _forget_gone(self, live: set[Any]) -> None:
        """Stop asking about gates no longer waiting (decided elsewhere, or the run moved on)."""
        for token in [t for t in self.asks if t not in live]:
            self.asks.pop(token).cancel()
        for token in [t for t in self.unanswered if t not in live]:
            self.unanswered.pop(token)

    def _open_gate(self, token: str, gate: dict[str, Any]) -> None:
        """Announce a waiting gate and ask the gate channel, or leave it waiting without one."""
        request = GateRequest.from_response({"run_id": self.run_id, **gate})
        self.emit("gate_waiting", self.run_id, step_id=request.step_id,
                  data={"round": gate.get("round"), "max_rounds": gate.get("max_rounds")})
        held = gate.get("decided")  # decided before the process that took it stopped
        if self.runner.gates is None and held is None:
            self.unanswered[token] = gate
            return
        decision = Decision(held["outcome"], held["rationale"], held["resolved_by"]) if held else None
        self.asks[token] = asyncio.ensure_future(self._ask(request, gate, decision))

    async def _ask(self, request: GateRequest, gate: dict[str, Any], held: Decision | None = None) -> None:
        try:
            answer = await self._answer(self._decide(request, gate, held))
        finally:
            self.asks.pop(request.token, None)
        self._deliver(answer)

    async def _decide(self, request: GateRequest, gate: dict[str, Any], held: Decision | None = None) -> Any:
        """The response after the channel's decision (or ``held``, one a person made before the
        process applying it stopped: applied again without asking); without one the gate is
        left waiting and the loop only woken. A decision said to be made elsewhere while the
        gate still waits is no decision (asking again would loop without end). A decision the
        engine refuses with the gate still waiting (:data:`KEPT_WAITING`) is told to whoever
        decided, and the channel is asked again without that outcome; answering it again leaves
        the gate waiting (noted in the run's result as ``refused``)."""
        withdrawn: set[str] = set()
        while True:
            decision = held if held is not None else await self._ask_channel(request)
            held = None
            if decision is not None and decision.applied:
                response = await self._engine_call(self.engine.status, self.run_id)
                if all(g.get("token") != request.token for g in waiting_gates(response)):
                    if not decision.ended:  # a run ended elsewhere: nobody decided the gate
                        self._emit_resolved(request, decision)
                    return response
                decision = None
            if decision is None or decision.outcome in withdrawn:
                self.unanswered[request.token] = gate
                return _WAKE
            try:
                response = await self._engine_call(
                    self.engine.gate_resolve, self.run_id, request.step_id, decision.outcome,
                    decision.rationale, decision.resolved_by, request.token, judging=request.step_id)
            except EngineError as exc:
                if exc.error_type in KEPT_WAITING:
                    request, gate = self._refused(request, gate, decision, exc)
                    withdrawn.add(decision.outcome)
                    continue
                return await self._not_applied(request, decision, exc)
            self._emit_resolved(request, decision)
            self._still_driving()  # a decision moves the run on: not by this drive if it was taken over
            return response

    async def _ask_channel(self, request: GateRequest) -> Decision | None:
        """The gate channel's decision about ``request``; None (left waiting) without a channel."""
        return None if self.runner.gates is None else await self.runner.gates.decide(request)

    def _refused(self, request: GateRequest, gate: dict[str, Any], decision: Decision,
                 refusal: EngineError) -> tuple[GateRequest, dict[str, Any]]:
        """A decision the engine refused, changing nothing, with the gate still waiting on the same
        token (a revise with no ``on_revise`` target or a carry value it cannot resolve): told to
        whoever decided (the channel's ``not_applied``, else the log), and the gate asked about
        again without that outcome, ``revise_unavailable`` saying why a revise is not offered."""
        if not self._tell_not_applied(request, decision, refusal):
            log.warning("run %s: the %s of gate %s was not applied: %s", self.run_id, decision.outcome,
                        request.step_id, refusal)
        self.refused[request.token] = {"step_id": request.step_id, "decision": decision.outcome,
                                       "error_type": refusal.error_type, "message": refusal.message}
        narrowed = {**gate, "decisions": [o for o in offered(request.response) if o != decision.outcome]}
        if decision.outcome == "revise":
            narrowed["revise_unavailable"] = refusal.message
        return GateRequest.from_response({"run_id": self.run_id, **narrowed}), narrowed

    async def _not_applied(self, request: GateRequest, decision: Decision, exc: EngineError) -> Any:
        """The run as stored after a refused decision: decided elsewhere first, or the gate was
        reset there (it waits for its dependencies again): the channel tells whoever decided
        (never dropped in silence), and the drive goes on from the durable state; or the run
        ended meanwhile. Any other refusal is raised."""
        if isinstance(exc, StaleToken) or exc.error_type == "not_awaiting":
            self._tell_not_applied(request, decision, exc)
            self._still_driving()
        elif exc.error_type not in ENDED_ELSEWHERE:
            raise exc
        return await self._engine_call(self.engine.status, self.run_id)

    def _tell_not_applied(self, request: GateRequest, decision: Decision, refusal: EngineError) -> bool:
        """Tell whoever decided (the gate channel's ``not_applied``) that ``decision`` was not
        applied; False when the channel has no one to tell."""
        report = getattr(self.runner.gates, "not_applied", None)
        if report is None:
            return False
        report(request, decision, refusal)
        return True

    def _emit_resolved(self, request: GateRequest, decision: Decision) -> None:
        self.emit("gate_resolved", self.run_id, step_id=request.step_id,
                  message=decision.rationale or None,
                  data={"decision": decision.outcome, "resolved_by": decision.resolved_by,
                        "elsewhere": decision.applied})

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

    def _watched_store(self) -> Any:
        """The engine's store when progress is observed and the run exists, else None."""
        store = getattr(self.engine, "store", None)
        if not self.watch_store or store is None or not self.run_id:
            return None
        return store

    def _last_seq(self) -> int:
        store = self._watched_store()
        if store is None:
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
        store = self._watched_store()
        if store is None:
            return
        for event in store.events(self.run_id, self.seen_seq):
            self.seen_seq = event.seq
            self._translate(event)

    def _translate(self, event: Any) -> None:
        if event.type in ("skipped", "fanout_item_skipped"):
            self.emit("step_skipped", self.run_id, step_id=event.step_id,
                      message=event.detail.get("reason"))

    async def _stop_all(self) -> None:
        self.stopping = True
        pending = [*self.calls.values(), *self.asks.values()]
        for task in pending:
            task.cancel()
        await self.runner.cancel_calls(self.run_id)
        await asyncio.gather(*pending, return_exceptions=True)
        self.calls.clear()
        self.asks.clear()

    def _cancel_run(self) -> None:
        """Record the run cancelled in the store (its driving was cancelled), unless the runner
        is detached (Ctrl-C of ``lockgate run``: the run is left resumable)."""
        if not self.run_id or self.runner.detached:
            return
        try:  # a cancel evaluates no ensure: no judge, so no need to await anything
            response = self._note(retry_conflicts(lambda: self.engine.cancel(self.run_id)))
        except EngineError:
            return
        self._finish(response if isinstance(response, dict) else {"status": "cancelled"})

    def _finish(self, response: dict[str, Any]) -> RunResult:
        status = str(response.get("status"))
        ended = getattr(self.runner.gates, "run_ended", None)
        if ended is not None:  # e.g. a terminal prompt stops watching for late answers
            ended(self.run_id)
        self.emit("run_finished", self.run_id, status=status,
                  message=response.get("message") or response.get("reason"),
                  data={k: response[k] for k in ("error_type", "output", "spent") if k in response})
        return RunResult(self.run_id, status, response, list(self.emit.history))


def waiting_gates(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The gates ``response`` shows waiting: its ``gates``, or itself when it is one gate."""
    gates = list(response.get("gates") or [])
    if response.get("status") == "await_gate" and not gates:
        gates = [response]
    return gates


def retry_conflicts(call: Callable[[], Any]) -> Any:
    """``call()``, replayed up to CONFLICT_RETRIES times on a concurrency conflict."""
    for _ in range(CONFLICT_RETRIES):
        try:
            return call()
        except ConcurrencyConflict:
            continue
    return call()


def _no_evaluator(*args: Any) -> Any:
    raise RunnerError(NO_RUNNER)

