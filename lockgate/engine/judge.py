"""Judges for ``judged`` ensures: a judge is an agent.

A judge is what :class:`~lockgate.engine.engine.Engine` takes as ``judge=``: a callable
``judge(statement, stakes, result, input) -> {"holds": bool, "reason": str}``, sync or async.
:class:`AgentJudge` makes one of any agent (an adapter with ``async execute(task)``): it sends one
:class:`~lockgate.engine.agents.base.Task` stating the statement, the stakes and the step's result
and input as JSON, whose output contract is :data:`VERDICT_SCHEMA`, so structured-output agents
(OpenAI-compatible servers, Claude Code, Codex) answer in that shape.

Failing closed has one home, the engine's ensure check (:mod:`lockgate.engine.ensures`): a judge
that raises, or answers anything but ``{holds: bool, reason}``, fails the ensure with a reason
saying why. So :class:`AgentJudge` raises :class:`JudgeError` when its agent fails (the message
carries the agent's own failure) and hands the agent's answer over unchanged.

:class:`JudgeBridge` lets the asyncio runner ask the judge without blocking its event loop; see
:func:`settle` for how and why.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, LockgateError, RunnerError
from .ensures import Subject, call_sync, judged_subject

if TYPE_CHECKING:  # the agents package imports every adapter (httpx...): not at engine import
    from .agents.base import Task

Judge = Callable[..., Any]
#: An agent name, an agent (anything with ``async execute(task)``) or a judge callable.
JudgeLike = str | Any

VERDICT_CONTRACT = "JudgeVerdict"
VERDICT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"holds": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["holds", "reason"],
    "additionalProperties": False,
}
STAKES_GUIDANCE = {
    "cheap": "A quick judgement is enough.",
    "default": "Judge carefully; if the evidence does not establish the statement, it does not hold.",
    "paranoid": ("Be strict: the statement holds only if the result clearly and fully establishes "
                 "it; any doubt, gap or ambiguity means it does not hold."),
}
#: Distinct judge questions one engine call may raise before the runner gives up (see settle).
MAX_QUESTIONS = 256
#: Seconds a cancelled judge callable may take to end before the run stops waiting for it (an
#: agent's process gets the same grace between SIGTERM and SIGKILL).
CANCEL_GRACE_S = 2.0


class JudgeError(LockgateError):
    """The judge's agent could not give a verdict (the ensure then fails closed). ``usage``: what
    the failed call spent (its measured time included), charged with the judged step as a
    verdict's is."""

    def __init__(self, message: str, usage: dict[str, float] | None = None) -> None:
        super().__init__(message)
        self.usage = usage or {}


class AgentJudge:
    """The judge callable over ``agent``: one task per question, the answer passed on as is."""

    def __init__(self, agent: Any, name: str | None = None) -> None:
        if not callable(getattr(agent, "execute", None)):
            raise ConfigError(f"a judge agent needs an execute(task) method; got {type(agent).__name__}")
        self.agent = agent
        self.name = name or str(getattr(agent, "name", "judge"))

    def __call__(self, statement: str, stakes: str, result: Any, input: Any) -> Awaitable[Any]:
        """The verdict (awaitable), asked as the step being judged, in its working directory
        (read here, in the engine's thread, where the engine sets them)."""
        subject = judged_subject()
        return self.ask(statement, stakes, result, input, step_id=subject.step_id if subject else None,
                        cwd=subject.cwd if subject else None)

    async def ask(self, statement: str, stakes: str, result: Any, input: Any, *, run_id: str = "",
                  step_id: str | None = None, cwd: str | None = None) -> Any:
        """The agent's verdict on ``statement``; ``step_id`` names the step being judged."""
        task = judge_task(statement, stakes, result, input, agent=self.name, run_id=run_id,
                          step_id=step_id, cwd=cwd)
        from .agents.base import timed_execute  # here: the agents package imports httpx

        outcome = await timed_execute(self.agent, task)
        spent = outcome.spend()  # its measured time too: ms budgets count judging
        if not outcome.ok:
            raise JudgeError(f"judge agent {self.name!r}: {outcome.failure}", usage=spent)
        if spent and isinstance(outcome.output, Mapping):
            return {**outcome.output, "usage": spent}  # settled like the judged step's own usage
        return outcome.output

    def __repr__(self) -> str:
        return f"AgentJudge({self.name!r}, {self.agent!r})"


def judge_task(statement: str, stakes: str, result: Any, input: Any, *, agent: str,
               run_id: str = "", step_id: str | None = None, cwd: str | None = None) -> Task:
    """The task asking ``agent`` to judge: the prompt, the verdict contract, and the question's
    parts in ``inputs`` (so a Python agent can judge without parsing the prompt)."""
    from .agents.base import Task

    return Task(run_id=run_id, step_id=step_id or "judge", prompt=judge_prompt(statement, stakes, result, input),
                agent=agent, contract=VERDICT_CONTRACT, schema=VERDICT_SCHEMA, cwd=cwd,
                inputs={"statement": statement, "stakes": stakes, "result": result, "input": input})


def judge_prompt(statement: str, stakes: str, result: Any, input: Any) -> str:
    guidance = STAKES_GUIDANCE.get(stakes, STAKES_GUIDANCE["default"])
    return "\n\n".join([
        ("You are the judge of a `judged` check in a Lockgate workflow: decide whether the "
         "statement below holds for the result a step produced."),
        f"Statement: {statement}",
        f"Stakes: {stakes}. {guidance}",
        f"The step's result (JSON):\n{_json(result)}",
        f"The flow's input (JSON):\n{_json(input)}",
        ('Answer with a JSON object {"holds": true or false, "reason": "..."}: "holds" is true '
         'only if the statement is true of the result; "reason" says why in one or two '
         "sentences, citing the evidence. A reason for false is handed back to the step's agent "
         "as the problem to fix."),
    ])


def as_judge(target: Any, resolve_agent: Callable[[str], Any] | None = None) -> Judge:
    """A judge callable from an agent name (through ``resolve_agent``), an agent, or a callable."""
    if isinstance(target, str):
        if resolve_agent is None:
            raise ConfigError(f"judge {target!r}: an agent name needs a runner to resolve it")
        return AgentJudge(resolve_agent(target), target)
    if isinstance(target, (AgentJudge, JudgeBridge)):
        return target
    if callable(getattr(target, "execute", None)):
        return AgentJudge(target)
    if callable(target):
        return target
    raise ConfigError(f"a judge is an agent name, an agent or a callable "
                      f"judge(statement, stakes, result, input); got {type(target).__name__}")


def project_judge(start: Any) -> tuple[Judge | None, str | None]:
    """(the judge ``judge`` in lockgate.toml names — the file nearest from ``start`` — or None,
    why there is none when the configuration cannot give one): for a process that is no runner
    (the CLI's commands, the MCP server), which says the problem to its user; judged ensures
    then fail closed, as with no judge."""
    from .agents.config import load_config
    from .agents.registry import resolve_agent

    try:
        config = load_config(start=start)
        if config.judge is None:
            return None, None
        return as_judge(config.judge, lambda name: resolve_agent(name, config=config)), None
    except LockgateError as exc:
        return None, str(exc)


async def ask_judge(judge: Judge, question: Question, *, run_id: str = "",
                    step_id: str | None = None, cwd: str | None = None) -> Any:
    """Ask ``judge`` on the running loop: an agent judge gets the run's context; a coroutine
    function is awaited (cancelled with the run, see :func:`_stoppable`); a plain function runs
    in a worker thread (a slow one never blocks)."""
    args = (question.statement, question.stakes, question.result, question.input)
    if isinstance(judge, JudgeBridge):
        judge = judge.judge
    if isinstance(judge, AgentJudge):
        return await judge.ask(*args, run_id=run_id, step_id=step_id, cwd=cwd)
    return await call_async(judge, *args)


async def call_async(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` awaited on the running loop without blocking it: a coroutine function is
    awaited (cancelled with the run, see :func:`_stoppable`); a plain function runs in a worker
    thread, and an awaitable it returns is awaited the same way. Serves judge callables and
    evaluate steps' evaluators."""
    if _is_async(fn):
        return await _stoppable(fn(*args))
    from .agents.threads import run_in_thread  # here: the agents package imports httpx

    value = await run_in_thread(fn, *args)  # a daemon thread: a hung judge does not hold the process
    return await _stoppable(value) if inspect.isawaitable(value) else value


_abandoned: set[asyncio.Future[Any]] = set()  # judge calls left running: referenced until they end


async def _stoppable(awaitable: Awaitable[Any]) -> Any:
    """What a judge callable's ``awaitable`` answers, awaited as a task of its own.

    A judge callable has no ``cancel()`` to stop it, as an agent has, so one that does not end
    when cancelled would hold a cancelled run forever. Cancelling this cancels the judge's task,
    waits up to :data:`CANCEL_GRACE_S` for it to end, then leaves it behind (its answer unused)
    and lets the cancellation through.
    """
    call = asyncio.ensure_future(_no_exit(awaitable))
    try:
        return await asyncio.shield(call)
    except asyncio.CancelledError:
        if call.done():  # the judge itself raised CancelledError: its answer, as before
            raise
        call.cancel()
        await asyncio.wait({call}, timeout=CANCEL_GRACE_S)
        if not call.done():
            _abandoned.add(call)
            call.add_done_callback(_forget)
        raise


async def _no_exit(awaitable: Awaitable[Any]) -> Any:
    """``awaitable``'s answer; a ``sys.exit()`` in it is its failure (ExitCalled), as in a judge
    run in a thread: raised in a task, SystemExit would end the event loop, and the process."""
    try:
        return await awaitable
    except SystemExit as exc:
        from .agents.threads import ExitCalled  # here: the agents package imports httpx

        raise ExitCalled(exc.code) from exc


def _forget(call: asyncio.Future[Any]) -> None:
    _abandoned.discard(call)
    if not call.cancelled():
        call.exception()  # retrieved: an abandoned judge's failure concerns nobody now


@dataclass(frozen=True)
class Question:
    """One call of the judge by the engine, about step ``step_id`` (working directory ``cwd``);
    ``key`` identifies it across replays."""

    statement: str
    stakes: str
    result: Any
    input: Any
    key: str
    step_id: str | None = None
    cwd: str | None = None

    @classmethod
    def of(cls, statement: str, stakes: str, result: Any, input: Any, subject: Subject | None = None) -> Question:
        step_id, cwd = (subject.step_id, subject.cwd) if subject is not None else (None, None)
        key = json.dumps([statement, stakes, result, input, step_id], sort_keys=True, default=repr)
        return cls(statement, stakes, result, input, key, step_id, cwd)


# --- settling: verdicts an engine transition needs from outside --------------------------------


class VerdictNeeded(BaseException):
    """Raised through an engine transition for a ``judged`` ensure's verdict not asked yet.

    A BaseException on purpose: the ensure check turns every Exception of a judge into a
    failure, and this is no answer; the transition is abandoned unsaved (the engine drops its
    cached run on any BaseException) and replayed by :func:`settle` once the verdict is in.
    """

    def __init__(self, question: Question) -> None:
        super().__init__(question.statement)
        self.question = question


@dataclass(frozen=True)
class _Raised:
    error: BaseException


class SettlePass:
    """What :func:`settle` has gathered for one engine call, read by the :class:`JudgeBridge`
    the engine calls inside it: ``memo`` (question key -> verdict, kept across replays) and
    ``asked`` (the keys answered in this pass, so a judge's spend counts once)."""

    def __init__(self, ask: Callable[[Question], Any] | None = None) -> None:
        self.memo: dict[str, Any] = {}
        self.asked: set[str] = set()
        #: a blocking settle's way to ask (see :func:`settle_here`)
        self.ask = ask

    def answer(self, question: Question) -> Any:
        """The gathered verdict on ``question``; raises :class:`VerdictNeeded` when there is none
        yet, and re-raises what asking raised."""
        if question.key not in self.memo:
            raise VerdictNeeded(question)
        answer = self.memo[question.key]
        if isinstance(answer, _Raised):
            raise answer.error
        return answer


_settling = threading.local()  # the SettlePass of the settle running in this thread, if any


def settling() -> SettlePass | None:
    """The pass of the :func:`settle` running the current engine call in this thread, or None
    (the engine is called some other way: the bridge then asks directly, blocking)."""
    return getattr(_settling, "current", None)


async def settle(transition: Callable[[], Any], ask: Callable[[Question], Awaitable[Any]]) -> Any:
    """Run the synchronous engine ``transition``, awaiting on this loop the verdicts of the
    judge (:class:`JudgeBridge`) it needs.

    Why not run the transition in a worker thread (``asyncio.to_thread``)? The engine is not
    thread-safe (its ``_live`` cache and each live run are mutated without locks), so every
    engine call would have to be serialised behind the judge anyway, results of other agents
    would queue for the whole wait, and a cancelled run could not stop a judge running on
    another thread. Instead the transition runs here, on the loop; when it reaches a question
    not answered yet, :class:`VerdictNeeded` abandons it unsaved, ``ask`` is awaited like any
    agent call (other agents and their results carry on meanwhile, and cancelling the run
    cancels it), and the transition is replayed on the current state with the verdicts so far.
    Each question is asked once per call, in the order the engine asks them, so a replay
    reaches the next question or completes.
    """
    state = SettlePass()
    while True:
        question = _attempt(state, transition)
        if not isinstance(question, Question):
            return question.value
        state.memo[question.key] = await _answer(ask, question)


def settle_blocking(transition: Callable[[], Any], ask: Callable[[Question], Any]) -> Any:
    """:func:`settle` for a caller without an event loop that serialises engine calls (the MCP
    server's lock): ``ask`` blocks for each verdict, and may let other engine calls run
    meanwhile (the transition was abandoned unsaved, and is replayed on what they did)."""
    state = SettlePass(ask)
    while True:
        question = _attempt(state, transition)
        if not isinstance(question, Question):
            return question.value
        _ask_blocking(state, question)


def settle_here(transition: Callable[[], Any]) -> Any:
    """``transition()``: a transaction an engine call commits after others (an evaluate
    command's answer, settled once the call's first transaction is saved and the command has
    run). Inside :func:`settle_blocking`, a verdict it needs is asked here and only it is
    replayed: replaying the whole call would find its first transaction done (a duplicate) and
    lose the command's answer. Elsewhere it is simply called."""
    state = settling()
    if state is None or state.ask is None:
        return transition()
    while True:
        try:
            return transition()
        except VerdictNeeded as need:
            _check_questions(state)
            _ask_blocking(state, need.question)


def _ask_blocking(state: SettlePass, question: Question) -> None:
    """Ask ``question`` with the blocking settle's ``ask``, keeping the verdict (or what asking
    raised: a judge is foreign code, its failure is the ensure's failure)."""
    assert state.ask is not None
    try:
        state.memo[question.key] = state.ask(question)
    except Exception as exc:  # noqa: BLE001 - see above
        state.memo[question.key] = _Raised(exc)


def _check_questions(state: SettlePass) -> None:
    if len(state.memo) >= MAX_QUESTIONS:
        raise RunnerError(f"one engine call asked the judge more than {MAX_QUESTIONS} "
                          "distinct questions; giving up") from None


@dataclass(frozen=True)
class _Done:
    value: Any


def _attempt(state: SettlePass, transition: Callable[[], Any]) -> _Done | Question:
    """One pass of ``transition`` with the verdicts of ``state``: its value, or the question it
    needs answered first."""
    previous = settling()
    _settling.current, state.asked = state, set()
    try:
        return _Done(transition())
    except VerdictNeeded as need:
        _check_questions(state)
        return need.question
    finally:
        _settling.current = previous


class JudgeBridge:
    """The judge as the engine sees it while a runner drives it.

    Called by the engine inside :func:`settle`, it answers from the verdicts gathered so far or
    raises :class:`VerdictNeeded`; called anywhere else (another thread, a sync caller of the
    engine) it asks the judge directly, blocking, exactly as a plain ``Engine(judge=...)`` would.
    """

    def __init__(self, judge: Judge) -> None:
        self.judge = judge

    def __call__(self, statement: str, stakes: str, result: Any, input: Any) -> Any:
        state = settling()
        subject = judged_subject()
        if state is None or (subject is not None and not subject.replayable):
            # not inside settle, or the transition already changed something outside the store
            # (git worktrees): it cannot be abandoned, so the judge is asked here, blocking
            return call_sync(self.judge, statement, stakes, result, input)
        question = Question.of(statement, stakes, result, input, subject)
        answer = state.answer(question)
        if question.key in state.asked:  # the same question again in this pass: spent once
            return {k: v for k, v in answer.items() if k != "usage"} if isinstance(answer, Mapping) else answer
        state.asked.add(question.key)
        return answer

    async def settle(self, transition: Callable[[], Any],
                     ask: Callable[[Question], Awaitable[Any]]) -> Any:
        """:func:`settle` (kept for callers of the method)."""
        return await settle(transition, ask)

    def __repr__(self) -> str:
        return f"JudgeBridge({self.judge!r})"


async def _answer(ask: Callable[[Question], Awaitable[Any]], question: Question) -> Any:
    """The verdict, or the exception asking raised, to re-raise inside the engine (a judge's
    fails the ensure closed)."""
    try:
        return await ask(question)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a judge is foreign code: its failure is the ensure's failure
        return _Raised(exc)


def _is_async(fn: Any) -> bool:
    """A coroutine function, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=repr)
