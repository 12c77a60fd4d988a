"""A route skips the whole branch it does not take, not just its first step (review s11
semantics #1, #2).

The steps after a step that failed and was routed to its ``on_fail`` step elsewhere, and a
gate's route target not taken, are on a branch not taken (the reference leaves them pending for
ever): Lockgate skips them and what follows, unless a step also waits on the branch taken
instead (a join, as the source document's ``publish: after: [verify, recover]``). Before, such
a skip released its dependents as a ``when`` skip does (semantics §6.6): ``deploy`` ran after a
failed ``build``, and a killed change was announced. An ``on_fail`` target no failure went to
is skipped as the reference skips it, releasing what follows; so is a gate's target when its
``when`` skipped the gate (review s11 r2 #1-#4).
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


def test_an_on_fail_target_no_failure_went_to_is_skipped_as_the_reference_skips_it() -> None:
    """recover (verify succeeded) is skipped and releases what follows, as in the reference
    (semantics §6.3 2.1, §6.6; review s11 r2 #4): the reference skips it too, it does not
    leave it pending, so nothing of Lockgate's own is at stake there."""
    spec = _spec("publish", RECOVERY + _do("publish", "check, recover2"))
    engine, run_id, final, agent = _run(spec, ALL_OK)
    assert final["status"] == "complete"
    assert sorted(agent.calls) == ["check", "publish", "recover2", "verify"]
    assert _statuses(engine, run_id)["recover"] == "skipped"


def test_a_join_through_a_later_step_of_the_recovery() -> None:
    """generate fails to recover; cleanup follows recover; publish waits on generate and
    cleanup: it joins the recovery through cleanup and runs (review s11 r2 #1)."""
    steps = (_do("generate", extra="attempts: 1\non_fail: recover") + _do("recover") + _do("cleanup", "recover")
             + _do("publish", "generate, cleanup"))
    engine, run_id, final, agent = _run(_spec("publish", steps), {**ALL_OK, "generate": [Fail("no")],
                                                                  "cleanup": [_ok("cleanup")]})
    assert final["status"] == "complete"
    assert agent.calls == ["generate", "recover", "cleanup", "publish"]


def test_a_gate_on_a_branch_not_taken_passes_on_what_was_taken_instead() -> None:
    """build fails to fix; review (after build) is skipped with its routes: publish waits on
    merge and fix, the step taken instead of the whole build branch, and runs (r2 #2a)."""
    steps = (_do("build", extra="attempts: 1\non_fail: fix") + _do("fix")
             + "      - id: review\n        after: [build]\n"
             "        gate: {on_approve: merge, on_revise: null, on_kill: discard}\n"
             + _do("merge", "review") + _do("discard", "review") + _do("publish", "merge, fix"))
    engine, run_id, final, agent = _run(_spec("publish", steps), {**ALL_OK, "build": [Fail("no")],
                                                                  "fix": [_ok("fix")]})
    assert final["status"] == "complete"
    assert agent.calls == ["build", "fix", "publish"]


def test_a_gate_its_when_skips_releases_both_routes_as_a_skip_does() -> None:
    """No decision was made, so no branch was taken or left: final after both routes runs, as
    before this change and as §6.6 says of a skip (r2 #2b)."""
    steps = (_do("draft") + "      - id: review\n        after: [draft]\n        when: \"input.topic == 'x'\"\n"
             "        gate: {on_approve: merge, on_revise: null, on_kill: discard}\n"
             + _do("merge", "review") + _do("discard", "review") + _do("final", "merge, discard"))
    engine, run_id, final, agent = _run(_spec("final", steps), {**ALL_OK, "final": [_ok("final")]})
    assert final["status"] == "complete"
    assert agent.calls == ["draft", "final"]


def test_a_null_approve_takes_the_gates_own_dependents() -> None:
    """on_approve: null at the root completes the gate and its dependents go on: a step after
    the gate and its kill target joins them on approve (r2 #3), and on kill."""
    steps = (_do("draft") + "      - id: review\n        after: [draft]\n"
             "        gate: {on_approve: null, on_revise: null, on_kill: discard}\n"
             + _do("discard", "review") + _do("wrapup", "review, discard"))
    spec = _spec("wrapup", steps)
    engine, run_id, final, agent = _run(spec, {**ALL_OK, "wrapup": [_ok("wrapup")]}, {"review": ["approve"]})
    assert final["status"] == "complete" and agent.calls == ["draft", "wrapup"]
    engine, run_id, final, agent = _run(spec, {**ALL_OK, "wrapup": [_ok("wrapup")]}, {"review": ["kill"]})
    assert final["status"] == "complete" and agent.calls == ["draft", "discard", "wrapup"]


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


def test_a_join_through_a_route_of_the_branch_taken() -> None:
    """build fails to fix; a gate after fix approves to ship (routed, not after the gate);
    publish waits on test (skipped with the build branch) and ship, which is on the branch
    taken through the gate's route: it joins and runs (review s11 r3 #1)."""
    steps = (_do("build", extra="attempts: 1\non_fail: fix") + _do("fix") + _do("test", "build")
             + "      - id: review\n        after: [fix]\n"
             "        gate: {on_approve: ship, on_revise: null, on_kill: null}\n"
             + _do("ship") + _do("publish", "test, ship"))
    engine, run_id, final, agent = _run(_spec("publish", steps), {**ALL_OK, "build": [Fail("no")],
                                                                  "fix": [_ok("fix")], "ship": [_ok("ship")]},
                                        {"review": ["approve"]})
    assert final["status"] == "complete"
    assert agent.calls == ["build", "fix", "ship", "publish"]


def test_a_route_target_no_route_went_to_is_no_join() -> None:
    """tests fails to fix, fix succeeds: escalate (fix's on_fail target) is skipped, no route
    went to it, so release, after tests and escalate, does not join the branch taken through
    it: it is skipped with the failed tests (review s12 late #1, variant b)."""
    steps = (_do("tests", extra="attempts: 1\non_fail: fix") + _do("fix", extra="on_fail: escalate")
             + _do("escalate") + _do("release", "tests, escalate"))
    engine, run_id, final, agent = _run(_spec("fix", steps), {**ALL_OK, "tests": [Fail("red")],
                                                              "fix": [_ok("fix")]})
    assert final["status"] == "complete"
    assert agent.calls == ["tests", "fix"]  # release ran after the failed tests before
    assert _statuses(engine, run_id) == {"tests": "failed", "fix": "succeeded", "escalate": "skipped",
                                         "release": "skipped"}
    assert _skip_reasons(engine, run_id)["release"] == "dependency tests failed and was routed to its on_fail step"


def test_a_kill_announcement_after_an_untaken_rollback_is_skipped_on_approve() -> None:
    """The gate approves to deploy (kill_notice not taken); deploy succeeds, so rollback, its
    on_fail target, is skipped unreached: announce_kill, after kill_notice and rollback, is on
    the kill branch only and is skipped (review s12 late #1, variant a)."""
    steps = ("      - id: review\n        gate: {on_approve: deploy, on_revise: null, on_kill: kill_notice}\n"
             + _do("deploy", extra="on_fail: rollback") + _do("rollback") + _do("kill_notice")
             + _do("announce_kill", "kill_notice, rollback"))
    engine, run_id, final, agent = _run(_spec("deploy", steps), ALL_OK | {n: [_ok(n)] for n in ("rollback",
                                                                        "kill_notice", "announce_kill")},
                                        {"review": ["approve"]})
    assert final["status"] == "complete"
    assert agent.calls == ["deploy"]
    assert _statuses(engine, run_id)["announce_kill"] == "skipped"
    assert _skip_reasons(engine, run_id)["announce_kill"] == "dependency kill_notice is on a branch not taken"


def test_a_join_through_the_route_that_was_taken_into_a_recovery() -> None:
    """build fails to fix, fix fails to escalate, escalate succeeds: publish, after test (with
    the failed build) and escalate (reached through the routes taken), joins and runs."""
    steps = (_do("build", extra="attempts: 1\non_fail: fix") + _do("fix", extra="attempts: 1\non_fail: escalate")
             + _do("escalate") + _do("test", "build") + _do("publish", "test, escalate"))
    engine, run_id, final, agent = _run(_spec("escalate", steps), {**ALL_OK, "build": [Fail("no")],
                                                                   "fix": [Fail("still no")],
                                                                   "escalate": [_ok("escalate")]})
    assert final["status"] == "complete"
    assert agent.calls == ["build", "fix", "escalate", "publish"]


def test_a_join_through_the_route_target_of_a_gate_its_when_skipped() -> None:
    """build fails to fix; the optional review after fix is skipped by its when, which releases
    its route target merge: merge is on the branch taken, so publish, after test (with the failed
    build) and merge, joins and runs (review s12a #1: it was skipped after 65a15b6)."""
    steps = (_do("build", extra="attempts: 1\non_fail: fix") + _do("fix") + _do("test", "build")
             + "      - id: review\n        after: [fix]\n        when: \"input.topic == 'review'\"\n"
             "        gate: {on_approve: merge, on_revise: null, on_kill: null}\n"
             + _do("merge") + _do("publish", "test, merge"))
    engine, run_id, final, agent = _run(_spec("fix", steps), {**ALL_OK, "build": [Fail("red")],
                                                              "fix": [_ok("fix")]})
    assert final["status"] == "complete"
    assert agent.calls == ["build", "fix", "publish"]
    assert _statuses(engine, run_id) == {"build": "failed", "fix": "succeeded", "test": "skipped",
                                         "review": "skipped", "merge": "skipped", "publish": "succeeded"}


def test_a_route_target_waiting_after_its_failed_router_says_why_it_never_runs() -> None:
    """fix, build's on_fail target, waits on test, which comes after build: once build fails,
    test never runs, so fix cannot either. Its skip said "test is on a branch not taken", as if
    fix were not the route taken (review s12b F5); lint LG910 warns of the spec."""
    steps = (_do("build", extra="attempts: 1\non_fail: fix") + _do("test", "build") + _do("fix", "test")
             + _do("publish", "fix"))
    engine, run_id, final, agent = _run(_spec("publish", steps), {**ALL_OK, "build": [Fail("red")]})
    assert final["status"] == "error" and final["error_type"] == "output_unavailable"
    assert agent.calls == ["build"]
    assert _skip_reasons(engine, run_id) == {
        "test": "dependency build failed and was routed to its on_fail step",
        "fix": "dependency test never runs: it comes after build, whose failure was routed to this step instead",
        "publish": "dependency fix was skipped on the route taken to it"}
