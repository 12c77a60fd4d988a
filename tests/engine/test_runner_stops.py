"""How a run driven by the runner stops: the outstanding limit ends it in the store, a judge
pending when the run is cancelled is cancelled with it, and a run stopping on a shared Runner
cancels its own calls of an agent (through ``agent.cancel``) and no other run's."""

from __future__ import annotations

import asyncio

import pytest
from test_judge_runner import JUDGED, writer
from test_runner import FINISH, fan_spec

from lockgate.engine import judge as judges
from lockgate.engine.engine import Engine
from lockgate.engine.runner import run
from lockgate.engine.store import open_store
from lockgate.errors import EngineError, RunnerError

GUARD = 30  # seconds: only a bound for a broken runner, never a pace


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_the_outstanding_limit_ends_the_run_cancelled_in_the_store(backend, tmp_path):
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
    run_id = events[0].run_id
    finished = events[-1]
    assert finished.kind == "run_finished" and finished.status == "cancelled"
    assert "more than max_outstanding = 3" in finished.message
    seen = first if backend == "memory" else engine()  # SQLite: what another process reads
    assert seen.status(run_id)["status"] == "cancelled"
    assert [r["status"] for r in seen.runs()] == ["cancelled"]
    with pytest.raises(EngineError, match="is cancelled"):
        seen.resume(run_id)
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []  # calls stopped


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
