"""A route skips the whole branch it does not take, not just its first step (review s11
semantics #1, #2).

A step skipped because no route went to it, or because the step it waits on failed and was
routed to its ``on_fail`` step elsewhere, is on a branch not taken: its dependents are skipped in
turn, unless they also wait on the branch taken instead (a join, as the source document's
``publish: after: [verify, recover]``). Before, such a skip released its dependents as a
``when`` skip does (semantics §6.6): ``deploy`` ran after a failed ``build``, and a killed
change was announced.
"""

from __future__ import annotations

from pathlib import Path

from engine_support import Fail, Script, drive

from lockgate.engine import Engine
from lockgate.engine.store import open_store

HEAD = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${%s.output}", contract: Note}
    max_rounds: 3
    steps:
"""


def _spec(output: str, steps: str) -> str:
    return HEAD % output + steps


def _do(step_id: str, after: str = "", extra: str = "") -> str:
    lines = [f"      - id: {step_id}"]
    if after:
        lines.append(f"        after: [{after}]")
    lines += [f'        do: "{step_id}"', "        out: Note"]
    return "\n".join(lines) + "\n" + "".join(f"        {line}\n" for line in extra.splitlines() if line)


BUILD = (_do("build", extra="attempts: 1\non_fail: notify") + _do("notify") + _do("test", "build")
         + _do("deploy", "test"))

GATED = (_do("draft") + "      - id: review\n        after: [draft]\n"
         "        gate: {on_approve: merge, on_revise: null, on_kill: discard}\n"
         + _do("merge", "review") + _do("discard", "review") + _do("announce", "merge"))


def _statuses(engine: Engine, run_id: str) -> dict[str, str]:
    return {t["step_id"]: t["status"] for t in engine.audit(run_id)["trace"]}


def _skip_reasons(engine: Engine, run_id: str) -> dict[str, str]:
    return {e["step_id"]: e["detail"]["reason"] for e in engine.audit(run_id)["events"] if e["type"] == "skipped"}


def _run(spec: str, plan: dict, decide: dict | None = None, store: object = None) -> tuple[Engine, str, dict, Script]:
    engine = Engine(store=store) if store is not None else Engine()
    run_id = engine.plan(spec, {"topic": "t"})["run_id"]
    agent = Script(plan)
    return engine, run_id, drive(engine, run_id, agent, decide), agent


def _ok(step_id: str) -> dict:
    return {"text": f"{step_id} done"}


ALL_OK = {name: [_ok(name)] for name in ("build", "notify", "test", "deploy", "draft", "merge", "discard",
                                          "announce", "lint", "report", "verify", "recover", "recover2",
                                          "check", "publish", "audit")}


def test_a_failure_routed_to_on_fail_skips_everything_after_the_failed_step() -> None:
    engine, run_id, final, agent = _run(_spec("notify", BUILD), {**ALL_OK, "build": [Fail("compiler error")]})
    assert final["status"] == "complete"
    assert agent.calls == ["build", "notify"]  # deploy ran here before
    assert _statuses(engine, run_id) == {"build": "failed", "notify": "succeeded", "test": "skipped",
                                         "deploy": "skipped"}
    assert _skip_reasons(engine, run_id) == {
        "test": "dependency build failed and was routed to its on_fail step",
        "deploy": "dependency test is on a branch not taken"}


def test_a_step_after_both_the_failed_branch_and_its_recovery_joins_them() -> None:
    spec = _spec("report", BUILD + _do("report", "deploy, notify"))
    engine, run_id, final, agent = _run(spec, {**ALL_OK, "build": [Fail("compiler error")]})
    assert final["status"] == "complete"
    assert agent.calls == ["build", "notify", "report"]
    assert _statuses(engine, run_id)["deploy"] == "skipped"


def test_a_kill_skips_the_approve_branch_and_what_follows_it_only() -> None:
    spec = _spec("discard", GATED + _do("lint", "draft") + _do("audit", "merge, lint") + _do("report", "announce, discard"))
    engine, run_id, final, agent = _run(spec, ALL_OK, {"review": ["kill"]})
    assert final["status"] == "complete"
    assert sorted(agent.calls) == ["discard", "draft", "lint", "report"]
    statuses = _statuses(engine, run_id)
    assert {k: statuses[k] for k in ("merge", "announce", "audit")} == dict.fromkeys(("merge", "announce", "audit"),
                                                                                   "skipped")
    # audit also waits on lint, which ran, but lint is not on the branch the kill took
    assert _skip_reasons(engine, run_id)["audit"] == "dependency merge is on a branch not taken"


def test_an_approve_skips_the_kill_branch_and_runs_its_own() -> None:
    spec = _spec("announce", GATED + _do("cleanup", "discard"))
    engine, run_id, final, agent = _run(spec, {**ALL_OK, "cleanup": [_ok("cleanup")]}, {"review": ["approve"]})
    assert final["status"] == "complete"
    assert agent.calls == ["draft", "merge", "announce"]
    assert _statuses(engine, run_id)["cleanup"] == "skipped"


RECOVERY = (_do("verify", extra="on_fail: recover") + _do("recover") + _do("recover2", "recover")
            + _do("check", "verify"))


def test_the_reference_join_after_a_step_and_its_recovery_runs_either_way() -> None:
    spec = _spec("publish", RECOVERY + _do("publish", "verify, recover"))
    engine, run_id, final, agent = _run(spec, ALL_OK)
    assert final["status"] == "complete" and "publish" in agent.calls
    assert _statuses(engine, run_id)["recover"] == "skipped"
    engine, run_id, final, agent = _run(spec, {**ALL_OK, "verify": [Fail("bad")]})
    assert final["status"] == "complete"
    assert sorted(agent.calls) == ["publish", "recover", "recover2", "verify", "verify"]  # two attempts
    assert _statuses(engine, run_id)["check"] == "skipped"  # after verify only: on the branch not taken


def test_a_join_through_a_later_step_of_the_branch_taken() -> None:
    """recover (not routed to: verify succeeded) and recover2 after it are skipped; publish waits
    on recover2 and on check, which ran after verify: it joins the branch taken and runs."""
    spec = _spec("publish", RECOVERY + _do("publish", "check, recover2") + _do("orphan", "recover2"))
    engine, run_id, final, agent = _run(spec, {**ALL_OK, "orphan": [_ok("orphan")]})
    assert final["status"] == "complete"
    assert sorted(agent.calls) == ["check", "publish", "verify"]
    statuses = _statuses(engine, run_id)
    assert (statuses["recover"], statuses["recover2"], statuses["orphan"]) == ("skipped",) * 3


def test_a_branch_not_taken_is_remembered_by_the_store(tmp_path: Path) -> None:
    """The mark survives a reload: a fresh engine on the same SQLite file resumes the run with
    test skipped on the branch not taken, and does not release deploy."""
    path = str(tmp_path / "runs.db")
    engine = Engine(store=open_store(path))
    run_id = engine.plan(_spec("notify", BUILD), {"topic": "t"})["run_id"]
    ready = engine.status(run_id)["ready"][0]
    assert ready["step_id"] == "build"
    engine.step_done(run_id, "build", None, ready["token"], failure="compiler error")
    engine.close()
    again = Engine(store=open_store(path))
    agent = Script(ALL_OK)
    assert drive(again, run_id, agent)["status"] == "complete"
    assert agent.calls == ["notify"]
    assert _statuses(again, run_id)["deploy"] == "skipped"
    again.close()
