"""A drive that is stopping (Ctrl-C: its agents are being stopped, which may take their grace
period) keeps its claim's "stopping" mark while it goes on renewing the claim, so a gate decided
meanwhile elsewhere is run by the deciding process, never left to the stopping drive (which
starts nothing more: the command would be run by nobody)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from processes import GUARD_S
from specs import note_flow

from lockgate.engine import Engine, drive
from lockgate.engine.runner import make_runner
from lockgate.engine.store import open_store

CLOSED = {"status": "closed", "children": [], "reason": "ok"}
SPEC = note_flow("""      - id: g1
        gate: {on_approve: c1, on_revise: null, on_kill: null}
      - {id: c1, evaluate: {command: "one", timeout_ms: 60000}, out: Verdict}
      - {id: x, agent: slow, do: "slow", out: Note}
""", output="c1", contract="Verdict")


class Stubborn:
    """An agent slow to stop: once cancelled, it runs on until the test lets it stop."""

    def __init__(self) -> None:
        self.started, self.stopping, self.let_stop = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def __call__(self, task: Any) -> dict[str, str]:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.stopping.set()
            while not self.let_stop.is_set():
                try:
                    await self.let_stop.wait()
                except asyncio.CancelledError:
                    continue
            raise
        return {"text": "never"}


async def test_a_stopping_drive_renewing_its_claim_keeps_it_stopping(tmp_path, monkeypatch):
    monkeypatch.setattr(drive, "RENEW_S", 0.0)  # the drive renews its claim at every watch
    monkeypatch.setattr(drive, "WATCH_S", 0.05)
    agent, ran = Stubborn(), []
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path,
                    evaluator=lambda *args: pytest.fail("the stopping driver ran the command"))
    other = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path,
                   evaluator=lambda command, *rest: ran.append(command) or {"ok": True, "result": CLOSED})
    runner = make_runner(engine=engine, agents={"slow": agent})
    driving = asyncio.ensure_future(runner.start(SPEC, {}))
    try:
        async with asyncio.timeout(GUARD_S):
            decided, run_id = await _decided_while_stopping(runner, agent, engine, other, driving)
    finally:
        agent.let_stop.set()  # a failure must not leave the agent running forever
    assert "driven_by" not in decided and ran == ["one"]
    assert other.driver_of(run_id) is None
    engine.close()
    other.close()


async def _decided_while_stopping(runner: Any, agent: Stubborn, engine: Engine, other: Engine,
                                  driving: Any) -> tuple[dict[str, Any], str]:
    """Stop the drive (as Ctrl-C does), let it renew its claim while its agent stops, then
    decide the gate in ``other``: (the decision's response, the run's id)."""
    await agent.started.wait()
    runner.detach()  # as Ctrl-C does: the run is left resumable
    driving.cancel()
    await agent.stopping.wait()
    (summary,) = engine.runs()
    run_id = summary["run_id"]
    while not other.claim_of(run_id).stopping:
        await asyncio.sleep(0.01)
    marked = other.claim_of(run_id).renewed_at
    while other.claim_of(run_id).renewed_at == marked:  # renewed since it was marked stopping
        await asyncio.sleep(0.01)
    assert other.claim_of(run_id).stopping
    assert "driven_by" not in other.status(run_id)
    deciding = asyncio.ensure_future(asyncio.to_thread(other.resolve_waiting_gate, run_id, "g1", "approve"))
    while not engine.status(run_id).get("evaluating"):  # the decision is in
        await asyncio.sleep(0.01)
    agent.let_stop.set()
    with pytest.raises(asyncio.CancelledError):
        await driving
    return await deciding, run_id
