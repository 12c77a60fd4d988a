"""A Revise click the engine refuses with the gate still waiting (its carry ``on_revise`` value
cannot be resolved) leaves the run waiting: the clicked card says the revise was not applied and
why, and a new card asks again without Revise."""

from __future__ import annotations

from specs import CARRIED


def agent(task):
    return {"tasks": ["t1"]} if task.step_id == "plan" else {"v": task.prompt}


async def test_a_refused_revise_click_is_shown_and_the_gate_asked_again(shell, tmp_path):
    spec = shell.run_cell_magic("flow", "carried", CARRIED)
    run = spec.start({"deep": False}, agents={"claude": agent}, store=str(tmp_path / "runs.db"))
    await run.wait_until(lambda r: "g" in r.waiting_gates())
    _future, first = run.gates.waiting["g"]
    first.note.value = "more tasks"
    first.revise.click()
    await run.wait_until(lambda r: "g" in r.waiting_gates() and r.gates.waiting["g"][1] is not first)
    assert "not applied" in first.title.value
    assert "<b>revise</b> was not applied: carry_revise_unresolved" in first.message.value
    assert "step assess was skipped" in first.message.value
    second = run.gates.waiting["g"][1]
    assert second.revise.layout.display == "none" and second.approve.layout.display != "none"
    assert "carry_revise_unresolved" in second.title.value
    second.approve.click()
    assert await run == {"v": 'work on ["t1"]'}
    assert [d["decision"] for d in run.audit()["trace"][-1]["decisions"]] == ["approve"]
