"""How a run driven by the runner stops: the outstanding limit ends it in the store, a judge
pending when the run is cancelled is cancelled with it, and a run stopping on a shared Runner
cancels its own calls of an agent (through ``agent.cancel``) and no other run's."""

from __future__ import annotations

import asyncio

import pytest
from test_runner import FINISH, fan_spec

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
