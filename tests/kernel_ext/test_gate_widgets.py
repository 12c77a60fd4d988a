"""Gate cards on a live run: clicks, double clicks, notes, decisions made elsewhere."""

from __future__ import annotations

import asyncio

import pytest

from lockgate.engine.engine import Engine
from lockgate.engine.store import open_store


def _agents(calls):
    def work(task):
        calls.append(task.attempt)
        return {"result": f"draft {len(calls)}", "quality_score": 0.9}

    return {"codex": work}


async def _started(shell, reviewed_work, tmp_path, calls):
    spec = shell.run_cell_magic("flow", "rw", reviewed_work)
    run = spec.start({"text": "t"}, agents=_agents(calls), store=str(tmp_path / "runs.db"))
    await run.wait_until(lambda r: "review" in r.waiting_gates())
    return run


async def test_approve_click_completes_the_run(shell, reviewed_work, tmp_path):
    calls = []
    run = await _started(shell, reviewed_work, tmp_path, calls)
    _future, card = run.gates.waiting["review"]
    card.approve.click()
    assert all(b.disabled for b in card.buttons)
    assert await run == {"result": "draft 1", "quality_score": 0.9}
    decisions = run.audit()["trace"][1]["decisions"]
    assert decisions[0]["decision"] == "approve" and decisions[0]["resolved_by"] == "human"
    assert "approve</b> by human" in card.message.value
    assert run.rows["review"].status == "succeeded"


async def test_double_click_cannot_resolve_twice(shell, reviewed_work, tmp_path):
    run = await _started(shell, reviewed_work, tmp_path, [])
    _future, card = run.gates.waiting["review"]
    card.approve.click()
    card.kill.click()  # disabled buttons: nothing happens
    card.click("kill")  # even bypassing the disabled state
    await run
    events = [e for e in run.audit()["events"] if e["type"] == "gate_resolved"]
    assert len(events) == 1 and events[0]["detail"]["decision"] == "approve"


async def test_revise_requires_a_note_then_reruns_the_target(shell, reviewed_work, tmp_path):
    calls = []
    run = await _started(shell, reviewed_work, tmp_path, calls)
    _future, card = run.gates.waiting["review"]
    card.revise.click()
    assert "needs a note" in card.message.value
    assert not any(b.disabled for b in card.buttons)
    card.note.value = "shorter, please"
    card.revise.click()
    assert "review" not in run.waiting_gates()  # decided at once, before the run moves on
    assert "decided" in card.title.value
    await run.wait_until(lambda r: "review" in r.waiting_gates() and len(calls) == 2)
    assert run.rows["work"].status == "succeeded"
    run.approve("review", "fine now")
    assert await run == {"result": "draft 2", "quality_score": 0.9}


async def test_kill_click_kills_the_run(shell, reviewed_work, tmp_path):
    run = await _started(shell, reviewed_work, tmp_path, [])
    run.gates.waiting["review"][1].kill.click()
    await run.wait_until(lambda r: r.done)
    assert run.status == "killed"
    with pytest.raises(RuntimeError, match="killed"):
        run.result()


async def test_gate_resolved_elsewhere_updates_the_card(shell, reviewed_work, tmp_path):
    run = await _started(shell, reviewed_work, tmp_path, [])
    _future, card = run.gates.waiting["review"]
    other = Engine(store=open_store(str(tmp_path / "runs.db")))  # e.g. the CLI in a terminal
    token = [g for g in other.pending_gates() if g["run_id"] == run.run_id][0]["token"]
    await asyncio.to_thread(other.gate_resolve, run.run_id, "review", "approve", "from the terminal", "cli", token)
    assert await run == {"result": "draft 1", "quality_score": 0.9}
    assert "decided elsewhere" in card.message.value and all(b.disabled for b in card.buttons)


async def test_an_agent_that_raises_shows_in_the_view(shell, reviewed_work, tmp_path):
    spec = shell.run_cell_magic("flow", "rw", reviewed_work)

    def broken(task):
        raise ValueError("model endpoint down")

    run = spec.start({"text": "t"}, agents={"codex": broken}, store=str(tmp_path / "runs.db"))
    await run.wait_until(lambda r: r.done)
    assert run.status == "error"
    assert run.rows["work"].status == "failed"
    assert "model endpoint down" in run.text_summary() or "model endpoint down" in str(run.response)
