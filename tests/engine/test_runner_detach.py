"""A detached Runner stops a cancelled run's agent calls but leaves the run resumable (what
Ctrl-C does in `lockgate run`); without detach the run is recorded cancelled. A run cancelled
by another process while its agent works ends the drive as cancelled, not as an error."""

from __future__ import annotations

import asyncio

import pytest
from test_runner import ONE_STEP

from lockgate.engine.engine import Engine
from lockgate.engine.runner import make_runner
from lockgate.engine.store import open_store

GUARD = 30  # seconds: only a bound for a broken runner, never a pace


@pytest.mark.parametrize("detach", [True, False])
async def test_a_cancelled_drive_leaves_the_run_as_it_is_once_detached(detach, tmp_path):
    engine = Engine(store=open_store(tmp_path / "runs.db"))
    called, stopped = asyncio.Event(), asyncio.Event()

    async def worker(task):
        called.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    runner = make_runner(engine=engine, agents={"worker": worker})
    driving = asyncio.ensure_future(runner.start(ONE_STEP, {}))
    await asyncio.wait_for(called.wait(), GUARD)
    if detach:
        runner.detach()
    driving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(driving, GUARD)
    assert stopped.is_set()
    (run_id,) = runner.run_ids
    status = Engine(store=open_store(tmp_path / "runs.db")).status(run_id)
    if detach:
        assert status["status"] == "execute_step" and status["step_id"] == "only"
        finished = await asyncio.wait_for(
            make_runner(engine=engine, agents={"worker": lambda task: {"text": "done"}}).resume(run_id), GUARD)
        assert finished.status == "complete" and finished.output == {"text": "done"}
    else:
        assert status["status"] == "cancelled"


async def test_a_run_cancelled_elsewhere_while_its_agent_works_ends_cancelled(tmp_path):
    engine = Engine(store=open_store(tmp_path / "runs.db"))
    called, go = asyncio.Event(), asyncio.Event()

    async def worker(task):
        called.set()
        await go.wait()
        return {"text": "too late"}

    runner = make_runner(engine=engine, agents={"worker": worker})
    driving = asyncio.ensure_future(runner.start(ONE_STEP, {}))
    await asyncio.wait_for(called.wait(), GUARD)
    (run_id,) = runner.run_ids
    Engine(store=open_store(tmp_path / "runs.db")).cancel(run_id, "stopped from another terminal")
    go.set()
    result = await asyncio.wait_for(driving, GUARD)
    assert result.status == "cancelled" and result.run_id == run_id
