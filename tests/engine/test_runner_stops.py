"""How a run driven by the runner stops: the outstanding limit refuses it before it is stored, a
judge pending when the run is cancelled is cancelled with it, and a run stopping on a shared
Runner cancels its own calls of an agent (through ``agent.cancel``) and no other run's."""

from __future__ import annotations

import asyncio
import sys

import pytest
from test_judge_runner import JUDGED, writer
from test_runner import FINISH, ONE_STEP, fan_spec

from lockgate.engine import judge as judges
from lockgate.engine.agents import (
    AgentResult,
    CommandAgent,
    OpenAIAgent,
    PythonAgent,
    ScriptedAgent,
    Task,
    process,
)
from lockgate.engine.agents.base import cancels_by_run
from lockgate.engine.engine import Engine
from lockgate.engine.runner import make_runner, run
from lockgate.engine.store import open_store
from lockgate.errors import RunnerError

GUARD = 30  # seconds: only a bound for a broken runner, never a pace


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_the_outstanding_limit_refuses_a_run_certain_to_pass_it_before_storing_it(backend, tmp_path):
    """A fanout over an input that starts more calls at once than max_outstanding allows is
    refused before the run is planned (it was cancelled after planning before review s11)."""
    def engine() -> Engine:
        return Engine(store=open_store("memory" if backend == "memory" else tmp_path / "runs.db"))

    first = engine()

    async def worker(task):
        await asyncio.Event().wait()

    events = []
    with pytest.raises(RunnerError, match="more than max_outstanding = 3 agent calls"):
        await asyncio.wait_for(run(fan_spec(concurrency=5), {"items": list("abcde")},
                                   agents={"worker": worker, "finisher": FINISH}, engine=first,
                                   max_running=1, max_outstanding=3, on_event=events.append), GUARD)
    assert events == []
    seen = first if backend == "memory" else engine()  # SQLite: what another process reads
    assert seen.runs() == []
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []  # nothing started


class NeverJudge:
    """A plain async judge that never answers: it awaits an event nobody sets. ``stubborn``, it
    also ignores its cancellation until ``release`` is set."""

    def __init__(self, stubborn: bool = False) -> None:
        self.stubborn = stubborn
        self.judging, self.cancelled, self.release, self.ended = (asyncio.Event() for _ in range(4))

    async def __call__(self, statement, stakes, result, input):
        self.judging.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            if not self.stubborn:
                raise
            await self.release.wait()
        finally:
            self.ended.set()


def judge_by(kind: str, never: NeverJudge):
    """The judge as given: an async callable, or a plain function returning its coroutine."""
    return never if kind == "async" else (lambda *args: never(*args))


@pytest.mark.parametrize("kind", ["async", "returns_awaitable"])
@pytest.mark.parametrize("stubborn", [False, True], ids=["honours_cancel", "ignores_cancel"])
async def test_cancelling_the_run_cancels_a_pending_judge_call(kind, stubborn, monkeypatch):
    """The run ends cancelled at once; a judge that ignores its cancellation is given the grace
    period and then left behind, as a killed agent's process would be."""
    monkeypatch.setattr(judges, "CANCEL_GRACE_S", 0.05)
    never = NeverJudge(stubborn)
    engine = Engine()
    events = []
    running = asyncio.ensure_future(run(JUDGED, {"topic": "rain"}, agents={"writer": writer},
                                        engine=engine, judge=judge_by(kind, never),
                                        on_event=events.append))
    await asyncio.wait_for(never.judging.wait(), GUARD)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(running, GUARD)
    assert never.cancelled.is_set() and never.ended.is_set() is not stubborn
    assert engine.status(events[0].run_id)["status"] == "cancelled"
    assert events[-1].kind == "run_finished" and events[-1].status == "cancelled"
    never.release.set()
    await asyncio.wait_for(never.ended.wait(), GUARD)


async def test_a_notebook_run_cancelled_while_its_judge_is_pending_ends_cancelled():
    from lockgate.dsl.loader import load
    from lockgate.kernel_ext.run_view import NotebookRun
    from lockgate.kernel_ext.spec_view import FlowSpec

    never = NeverJudge()
    flowspec = FlowSpec("judged", load(JUDGED))
    notebook = NotebookRun(flowspec, Engine(judge=never), agents={"writer": writer})
    notebook._launch(notebook.runner.start(flowspec.spec, {"topic": "rain"}))
    await asyncio.wait_for(never.judging.wait(), GUARD)
    assert notebook.cancel()["status"] == "cancelled"
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(notebook._task, GUARD)
    assert never.cancelled.is_set() and notebook.status == "cancelled"
    assert notebook.engine.status(notebook.run_id)["status"] == "cancelled"


# --- two runs sharing one Runner -------------------------------------------------------------------

HELPED = ONE_STEP.replace("agent: worker", "agent: helper")


class Custom:
    """A custom adapter with only ``cancel()`` (which stops every call): it records each cancel.
    A ``stubborn`` call ignores its task's first cancellation and goes on until ``cancel`` or
    :meth:`release` ends it (a second one, from a failing test's guard, ends it too)."""

    name = "custom"

    def __init__(self, stubborn: bool = False) -> None:
        self.stubborn = stubborn
        self.cancels: list[str | None] = []
        self.calls: dict[str, asyncio.Future] = {}  # run id -> the call's answer
        self.started: list[str] = []
        self.call_started = asyncio.Event()

    async def execute(self, task: Task) -> AgentResult:
        answer = asyncio.get_running_loop().create_future()
        self.calls[task.run_id] = answer
        self.started.append(task.run_id)
        self.call_started.set()
        try:
            return await asyncio.shield(answer)
        except asyncio.CancelledError:
            if not self.stubborn:
                raise
        return await asyncio.shield(answer)

    async def cancel(self) -> None:
        self.cancels.append(None)
        self._end(lambda run_id: True)

    def release(self, run_id: str, text: str) -> None:
        self.calls[run_id].set_result(AgentResult.success({"text": text}))

    def _end(self, which) -> None:
        for run_id, answer in self.calls.items():
            if which(run_id) and not answer.done():
                answer.set_result(AgentResult.failed(f"agent {self.name!r} was cancelled"))

    async def next_call(self) -> str:
        """The run id of the next call to start."""
        await asyncio.wait_for(self.call_started.wait(), GUARD)
        self.call_started.clear()
        return self.started[-1]


class TargetedCustom(Custom):
    """The same adapter taking ``cancel(run_id=...)``: it stops that run's calls only."""

    async def cancel(self, run_id: str | None = None) -> None:
        self.cancels.append(run_id)
        self._end(lambda owner: run_id is None or owner == run_id)


async def _stop_first(runner, first_spec: str, second_spec: str, first_agent: Custom,
                      second_agent: Custom):
    """Start a run of ``first_spec`` then one of ``second_spec`` on ``runner``, each with a call
    in flight, and cancel the first; its id, the second run's id and task."""
    first = asyncio.ensure_future(runner.start(first_spec, {}))
    first_id = await first_agent.next_call()
    second = asyncio.ensure_future(runner.start(second_spec, {}))
    second_id = await second_agent.next_call()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(first, GUARD)
    assert runner.engine.status(first_id)["status"] == "cancelled"
    return first_id, second_id, second


async def test_a_run_stopping_on_a_shared_runner_cancels_an_adapter_only_it_is_calling():
    """The other run calls another agent: ``cancel()`` reaches the stubborn call of the run
    being stopped (without it the stop waited for ever), and the other run goes on."""
    custom, helper = Custom(stubborn=True), Custom()
    runner = make_runner(store="memory", agents={"worker": custom, "helper": helper})
    _, second_id, second = await _stop_first(runner, ONE_STEP, HELPED, custom, helper)
    assert custom.cancels == [None] and helper.cancels == []
    helper.release(second_id, "second")
    result = await asyncio.wait_for(second, GUARD)
    assert result.ok and result.output == {"text": "second"}


async def test_an_adapter_with_only_cancel_is_not_cancelled_while_another_run_calls_it():
    """``cancel()`` would stop the other run's call too: the stopping run's call gets its task's
    cancellation only, and the other run's call goes on to its own answer."""
    custom = Custom()
    runner = make_runner(store="memory", agents={"worker": custom})
    _, second_id, second = await _stop_first(runner, ONE_STEP, ONE_STEP, custom, custom)
    assert custom.cancels == [] and not custom.calls[second_id].done()
    custom.release(second_id, "second")
    result = await asyncio.wait_for(second, GUARD)
    assert result.ok and result.output == {"text": "second"}
    assert not [e for e in result.events if e.kind in ("step_failed", "step_retrying")]


async def test_a_run_stopping_on_a_shared_runner_cancels_its_own_calls_by_run_id():
    """An adapter taking ``cancel(run_id=...)`` is told which run stops, even while the other
    run calls it too: the stubborn call of the stopped run ends, the other one goes on."""
    custom = TargetedCustom(stubborn=True)
    runner = make_runner(store="memory", agents={"worker": custom})
    first_id, second_id, second = await _stop_first(runner, ONE_STEP, ONE_STEP, custom, custom)
    assert custom.cancels == [first_id] and not custom.calls[second_id].done()
    custom.release(second_id, "second")
    result = await asyncio.wait_for(second, GUARD)
    assert result.ok and result.output == {"text": "second"}
    assert custom.cancels == [first_id, second_id]  # the second run's end: its own calls only


async def test_a_nested_run_ending_does_not_cancel_the_call_driving_it():
    """An adapter with only ``cancel()`` drives a nested run on the same Runner: that run's end
    leaves the outer run's call of the adapter be."""

    class Driver:
        name = "driver"

        def __init__(self) -> None:
            self.runner = None
            self.in_call = False
            self.cancels_in_call = 0

        async def execute(self, task: Task) -> AgentResult:
            self.in_call = True
            try:
                inner = await self.runner.start(HELPED, {})
            finally:
                self.in_call = False
            return AgentResult.success(inner.output)

        async def cancel(self) -> None:
            self.cancels_in_call += self.in_call

    driver = Driver()
    runner = make_runner(store="memory", agents={"worker": driver, "helper": lambda t: {"text": "inner"}})
    driver.runner = runner
    result = await asyncio.wait_for(runner.start(ONE_STEP, {}), GUARD)
    assert result.ok and result.output == {"text": "inner"} and driver.cancels_in_call == 0


def test_which_adapters_cancel_by_run():
    class Old:
        async def cancel(self): ...

    class Options:
        async def cancel(self, **options): ...

    builtins = [PythonAgent("p", lambda task: 1), ScriptedAgent(), CommandAgent("c", ["true"]),
                OpenAIAgent("o", model="m", base_url="http://127.0.0.1:9"), TargetedCustom()]
    assert all(cancels_by_run(agent) for agent in builtins)
    assert not any(cancels_by_run(agent) for agent in (Old(), Options(), Custom(), object()))


def _task(run_id: str) -> Task:
    return Task(run_id=run_id, step_id="only", prompt="p", agent="a")


@pytest.mark.parametrize("kind", ["python", "http"])
async def test_builtin_adapters_cancel_only_the_named_runs_calls(kind):
    entered = {"a": asyncio.Event(), "b": asyncio.Event()}

    async def wait_forever(task: Task):
        entered[task.run_id].set()
        await asyncio.Event().wait()

    if kind == "python":
        agent = PythonAgent("p", wait_forever)
    else:
        agent = OpenAIAgent("o", model="m", base_url="http://127.0.0.1:9")
        agent._execute = wait_forever  # the HTTP exchange itself is not what is tested here
    calls = {run_id: asyncio.ensure_future(agent.execute(_task(run_id))) for run_id in entered}
    for event in entered.values():
        await asyncio.wait_for(event.wait(), GUARD)
    await agent.cancel(run_id="a")
    stopped = await asyncio.wait_for(calls["a"], GUARD)
    assert stopped.failure == f"agent {agent.name!r} was cancelled" and not calls["b"].done()
    await agent.cancel()
    assert (await asyncio.wait_for(calls["b"], GUARD)).failure == stopped.failure


async def test_a_command_agent_kills_only_the_named_runs_processes(monkeypatch):
    spawned = []
    both = asyncio.Event()
    spawn = process._spawn

    async def counted(*args, **kwargs):
        proc = await spawn(*args, **kwargs)
        spawned.append(proc)
        if len(spawned) == 2:
            both.set()
        return proc

    monkeypatch.setattr(process, "_spawn", counted)
    agent = CommandAgent("c", [sys.executable, "-c", "import sys, time; sys.stdin.read(); time.sleep(600)"])
    calls = {run_id: asyncio.ensure_future(agent.execute(_task(run_id))) for run_id in "ab"}
    await asyncio.wait_for(both.wait(), GUARD)
    await agent.cancel(run_id="a")
    stopped = await asyncio.wait_for(calls["a"], GUARD)
    assert "was cancelled" in stopped.failure and not calls["b"].done()
    await agent.cancel()
    assert "was cancelled" in (await asyncio.wait_for(calls["b"], GUARD)).failure
