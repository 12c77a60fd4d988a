"""A revert made through the engine whose runner's drive holds the run (a notebook reverting the
run its kernel drives) runs the command the revert issues again in the reverting call; the
drive, watching the run meanwhile, must not start that command a second time."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from processes import GUARD_S
from specs import note_flow

from lockgate.engine import Engine, drive
from lockgate.engine.runner import make_runner
from lockgate.engine.store import open_store

CLOSED = {"status": "closed", "children": [], "reason": "ok"}
SPEC = note_flow("""      - {id: y, agent: slow, do: "slow", out: Note}
      - {id: c1, evaluate: {command: "one", timeout_ms: 60000}, out: Verdict}
""", output="c1", contract="Verdict")


class Held:
    """An evaluator whose every run waits until the test releases it (``release[n]``, n from 0)."""

    def __init__(self) -> None:
        self.ran: list[threading.Event] = []
        self.started = threading.Condition()

    def __call__(self, command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        release = threading.Event()
        with self.started:
            self.ran.append(release)
            self.started.notify_all()
        assert release.wait(GUARD_S), "the test never released the command"
        return {"ok": True, "result": CLOSED}

    async def wait_runs(self, count: int) -> None:
        def wait() -> None:
            with self.started:
                assert self.started.wait_for(lambda: len(self.ran) >= count, GUARD_S)
        await asyncio.to_thread(wait)


async def test_a_revert_through_the_driving_engine_runs_its_command_once(tmp_path, monkeypatch):
    monkeypatch.setattr(drive, "WATCH_S", 0.01)
    looks = []  # the drive's looks at the run (its watch) while the revert's command runs
    original = drive.Drive._start_released
    monkeypatch.setattr(drive.Drive, "_start_released", lambda self, status: looks.append(1) or original(self, status))
    slow = asyncio.Event()

    async def agent(task: Any) -> dict[str, str]:
        await slow.wait()
        return {"text": "slow"}

    held = Held()
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path, evaluator=held)
    runner = make_runner(engine=engine, agents={"slow": agent})
    driving = asyncio.ensure_future(runner.start(SPEC, {}))
    try:
        async with asyncio.timeout(GUARD_S):
            await held.wait_runs(1)  # the drive runs c1
            (summary,) = engine.runs()
            run_id = summary["run_id"]
            engine.commit(run_id, "c1 running")
            held.ran[0].set()
            while engine.status(run_id).get("evaluating"):
                await asyncio.sleep(0.01)
            reverting = asyncio.ensure_future(asyncio.to_thread(engine.revert, run_id, "c1 running"))
            await held.wait_runs(2)  # the reverting call runs c1 again
            seen = len(looks)
            while len(looks) < seen + 3:  # the drive has looked at the run since, more than once
                await asyncio.sleep(0.01)
            assert len(held.ran) == 2, "c1 was started a third time, beside the revert's run of it"
            held.ran[1].set()
            await reverting
            slow.set()
            result = await driving
    finally:
        for release in held.ran:
            release.set()
        slow.set()
    assert result.status == "complete" and len(held.ran) == 2
    engine.close()


async def test_a_drive_with_nothing_in_flight_waits_for_the_reverting_calls_command(tmp_path, monkeypatch):
    """Once its agent calls are done, the drive waits for the command the revert runs (its
    answer moves the run on) rather than resume the run again and again meanwhile."""
    monkeypatch.setattr(drive, "WATCH_S", 0.01)
    looks = []
    original = drive.Drive._start_released
    monkeypatch.setattr(drive.Drive, "_start_released", lambda self, status: looks.append(1) or original(self, status))
    calls = []

    async def agent(task: Any) -> dict[str, str]:
        calls.append(task.step_id)
        if len(calls) == 1:
            await asyncio.Event().wait()  # until the revert withdraws it
        return {"text": "slow"}

    held = Held()
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path, evaluator=held)
    runner = make_runner(engine=engine, agents={"slow": agent})
    driving = asyncio.ensure_future(runner.start(SPEC, {}))
    try:
        async with asyncio.timeout(GUARD_S):
            await held.wait_runs(1)
            (summary,) = engine.runs()
            run_id = summary["run_id"]
            engine.commit(run_id, "c1 running")
            held.ran[0].set()
            while engine.status(run_id).get("evaluating"):
                await asyncio.sleep(0.01)
            reverting = asyncio.ensure_future(asyncio.to_thread(engine.revert, run_id, "c1 running"))
            await held.wait_runs(2)
            while len(calls) < 2 or engine.status(run_id).get("ready") or engine.status(run_id).get("outstanding"):
                await asyncio.sleep(0.01)  # y answered again: only the revert's command is left
            seen = len(looks)
            while len(looks) < seen + 5:
                await asyncio.sleep(0.01)
            resumed = [e for e in engine.store.events(run_id) if e.type == "resumed"]
            assert len(resumed) <= 1, f"the drive resumed the run {len(resumed)} times while the command ran"
            held.ran[1].set()
            await reverting
            result = await driving
    finally:
        for release in held.ran:
            release.set()
    assert result.status == "complete" and len(held.ran) == 2
    engine.close()
