"""``why`` says why steps were skipped, and ``may_judge`` follows the engine's rule for skips
(session 11's weak points).

Since session 11 a route skips the whole branch it does not take: ``why`` names the skipped steps
before what a run waits on (every one, once it ended) in the words of their ``skipped`` events,
which ``lockgate show`` prints. ``may_judge`` (does a gate decision reach a judged ensure in the
process deciding it?) still let a skip release its dependents: it asked for a judge after a
route whose branch the engine skips whole, and missed a judged step released by a gate that its
``when`` skipped (whose routes are skipped and release what follows them). Each case here is
checked against a real engine deciding the gate with a judge that counts its questions.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lockgate.dsl.loader import load
from lockgate.engine import Engine
from lockgate.engine.runjudge import may_judge
from lockgate.engine.store import open_store

ROOT = Path(__file__).resolve().parents[2]

BRANCHES = """version: 1
contracts:
  A: {answer: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${recover.output}", contract: A}
    steps:
      - {id: build, do: "b", agent: w, out: A, on_fail: recover}
      - {id: recover, do: "r", agent: w, out: A}
      - {id: deploy, after: [build], do: "d", agent: w, out: A}
      - {id: polish, after: [recover], when: "result.recover.answer == 'never'", do: "p", agent: w, out: A}
      - {id: aside, when: "false", do: "x", agent: w, out: A}
      - id: review
        after: [deploy, recover, polish]
        gate: {on_approve: null, on_revise: null, on_kill: rollback}
      - {id: rollback, do: "rb", agent: w, out: A}
"""


def _at_gate(engine: Engine, text: str, fail: tuple[str, ...] = ()) -> str:
    """A run of ``text`` whose agents' steps answered (those in ``fail`` failing), at its gate."""
    run_id = engine.plan(text, {})["run_id"]
    status = engine.status(run_id)
    while status["status"] != "await_gate":
        entry = status["ready"][0]
        failed = entry["step_id"] in fail
        engine.step_done(run_id, entry["step_id"], None if failed else {"answer": "a"}, entry["token"],
                         failure="broken" if failed else None)
        status = engine.status(run_id)
    return run_id


def _decide(engine: Engine, run_id: str, outcome: str) -> dict[str, Any]:
    gate = engine.status(run_id)["gates"][0]
    return engine.gate_resolve(run_id, gate["step_id"], outcome, "decided", "human", gate["token"])


def _skip_events(engine: Engine, run_id: str) -> dict[str, str]:
    """What each ``skipped`` event says (the words ``lockgate show`` prints)."""
    return {e["step_id"]: e["detail"]["reason"] for e in engine.audit(run_id)["events"] if e["type"] == "skipped"}


def test_why_says_why_the_steps_before_a_waiting_gate_were_skipped(tmp_path: Path) -> None:
    engine = Engine(store=open_store(str(tmp_path / "runs.db")))
    run_id = _at_gate(engine, BRANCHES, fail=("build",))
    why = engine.why(run_id)
    assert why["summary"] == (
        f"run {run_id} is running: 1 gate and 0 dispatches outstanding; skipped: deploy (dependency build "
        "failed and was routed to its on_fail step; the branch taken: recover), polish (when "
        "\"result.recover.answer == 'never'\" is not true)")
    # `aside` was skipped too, but nothing the run waits on comes after it
    assert [skip["step_id"] for skip in why["skipped"]] == ["deploy", "polish"]
    assert why["skipped"][0]["taken"] == ["recover"] and why["skipped"][1]["taken"] is None
    events = _skip_events(engine, run_id)
    assert all(skip["reason"] == events[skip["step_id"]] for skip in why["skipped"])
    engine.close()


def test_why_of_a_finished_run_names_its_skipped_steps_in_the_words_of_show(tmp_path: Path) -> None:
    engine = Engine(store=open_store(str(tmp_path / "runs.db")))
    run_id = _at_gate(engine, BRANCHES, fail=("build",))
    assert _decide(engine, run_id, "approve")["status"] == "complete"
    why = engine.why(run_id)
    assert [skip["step_id"] for skip in why["skipped"]] == ["deploy", "polish", "aside", "rollback"]
    assert why["skipped"][3] == {"step_id": "rollback", "reason": "no route to this step was taken",
                                 "taken": ["review"]}
    assert why["summary"].startswith(f"run {run_id} is complete; nothing to unblock; skipped: deploy (")
    assert why["summary"].endswith(', aside (when "false" is not true), and 1 more')  # three named at most
    events = _skip_events(engine, run_id)
    assert {skip["step_id"]: skip["reason"] for skip in why["skipped"]} == events
    engine.close()


def test_why_of_a_run_with_no_skips_says_nothing_of_them(tmp_path: Path) -> None:
    engine = Engine(store=open_store(str(tmp_path / "runs.db")))
    run_id = _at_gate(engine, UNTAKEN)
    why = engine.why(run_id)
    assert why["summary"] == f"run {run_id} is running: 1 gate and 0 dispatches outstanding"
    assert why["skipped"] == []
    engine.close()


def _lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    return subprocess.run([sys.executable, "-m", "lockgate", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_lockgate_why_prints_why_steps_were_skipped(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    engine = Engine(store=open_store(str(store)))
    run_id = _at_gate(engine, BRANCHES, fail=("build",))
    engine.close()
    why = _lockgate(tmp_path, "why", run_id, "--store", str(store))
    assert why.returncode == 0, why.stderr
    assert why.stdout.splitlines()[0].endswith(
        "; skipped: deploy (dependency build failed and was routed to its on_fail step; the branch taken: "
        "recover), polish (when \"result.recover.answer == 'never'\" is not true)"), why.stdout


# -- may_judge against the engine --------------------------------------------------------------------

HEAD = """version: 1
contracts:
  A: {answer: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${answer.output}", contract: A}
    steps:
      - {id: answer, do: "a", agent: w, out: A}
"""
AUDIT = """      - id: audit
        after: [%s]
        set: {answer: "'ok'"}
        out: A
        ensure: [{judged: {statement: "The audit holds"}}]
"""
#: an approve skips the kill target `cleanup` as the branch not taken, and `audit` after it
UNTAKEN = HEAD + """      - id: review
        after: [answer]
        gate: {on_approve: final, on_revise: null, on_kill: cleanup}
      - {id: final, after: [review], do: "f", agent: w, out: A}
      - {id: cleanup, after: [review], do: "c", agent: w, out: A}
""" + AUDIT % "cleanup"
#: ... but a step that also waits on the branch taken joins it and runs (the approve's `prep`)
JOINED = HEAD + """      - id: review
        after: [answer]
        gate: {on_approve: prep, on_revise: null, on_kill: cleanup}
      - {id: prep, set: {answer: "'p'"}, out: A}
      - {id: cleanup, after: [review], do: "c", agent: w, out: A}
""" + AUDIT % "cleanup, prep"
#: an approve reaches `second`, a gate its `when` skips: its route target `publish` is skipped
#: with it, releasing `audit` at once
WHEN_GATE = HEAD + """      - id: review
        after: [answer]
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: second
        after: [review]
        when: "result.answer.answer == 'never'"
        gate: {on_approve: publish, on_revise: null, on_kill: null}
      - {id: publish, do: "p", agent: w, out: A}
""" + AUDIT % "publish"
#: an approve reaches `check`, an agent's step its `when` skips: its on_fail target `fix` is
#: skipped with it, releasing `audit` at once
WHEN_FAIL = HEAD + """      - id: review
        after: [answer]
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - {id: check, after: [review], when: "false", do: "c", agent: w, out: A, on_fail: fix}
      - {id: fix, do: "f", agent: w, out: A}
""" + AUDIT % "fix"

#: an approve starts `merge`, an agent's step whose task fails to render here (it names the
#: skipped `extra`): its failure routes to `check`, judged in the deciding process (review s12a #2)
RENDER_FAIL = HEAD + """      - {id: extra, after: [answer], when: "false", do: "x", agent: w, out: A}
      - id: review
        after: [extra]
        gate: {on_approve: merge, on_revise: null, on_kill: null}
      - {id: merge, do: "merge ${extra.output.answer}", agent: w, out: A, attempts: 1, on_fail: check}
      - id: check
        set: {answer: "'checked'"}
        out: A
        ensure: [{judged: {statement: "The merge was checked"}}]
"""

#: `pre` fails before the gate and routes to `check`, which the revise's region holds (`work`
#: routes there too): the route taken from outside the region is kept, so the revise runs the
#: judged `check` again at once (review s12b F2)
KEPT_ROUTE = """version: 1
contracts:
  A: {answer: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${answer.output}", contract: A}
    max_rounds: 3
    steps:
      - {id: answer, do: "a", agent: w, out: A}
      - {id: pre, do: "p", agent: w, out: A, attempts: 1, on_fail: check}
      - {id: work, after: [answer], do: "w", agent: w, out: A, on_fail: check}
      - id: check
        set: {answer: "'checked'"}
        out: A
        ensure: [{judged: {statement: "The check holds"}}]
      - id: review
        after: [work, check]
        gate: {on_approve: null, on_revise: answer, on_kill: null}
"""

#: as KEPT_ROUTE, but the kept target `check` waits on `answer`, which the revise resets to an
#: agent's dispatch: it runs when `answer` is answered, not in the deciding process (review s13c F3)
KEPT_WAITING = KEPT_ROUTE.replace("      - id: check\n", "      - id: check\n        after: [answer]\n")


def _judged_by_deciding(tmp_path: Path, text: str, outcome: str, fail: tuple[str, ...]) -> tuple[bool, dict]:
    """Whether a real engine deciding ``outcome`` at the run's gate asks its judge anything (the
    steps in ``fail`` fail before the gate), and the steps a route started before the decision."""
    asked: list[Any] = []

    def judge(*question: Any) -> dict[str, Any]:
        asked.append(question)
        return {"holds": True, "reason": "ok"}

    engine = Engine(store=open_store(str(tmp_path / "runs.db")), judge=judge)
    run_id = _at_gate(engine, text, fail=fail)
    routed = engine.routed(run_id)
    asked.clear()  # only what deciding asks
    _decide(engine, run_id, outcome)
    engine.close()
    return bool(asked), routed


@pytest.mark.parametrize(("text", "outcome", "judged", "fail"), [
    (UNTAKEN, "approve", False, ()),  # asked for a judge before: a skip released `audit`
    (UNTAKEN, "reject", False, ()),
    (JOINED, "approve", True, ()),
    (WHEN_GATE, "approve", True, ()),  # said none was needed before: the judged ensure failed closed
    (WHEN_FAIL, "approve", True, ()),  # likewise
    (RENDER_FAIL, "approve", True, ()),  # likewise: an agent's step may fail here, before any agent
    (KEPT_ROUTE, "revise", True, ("pre",)),  # likewise: a route kept through the reset runs its target again
    (KEPT_WAITING, "revise", False, ("pre",)),  # asked for a judge before: the kept target waits on an agent
], ids=["untaken-branch", "taken-route", "joins-the-branch-taken", "when-skipped-gate", "when-skipped-on-fail",
        "failing-at-once-on-fail", "revise-keeps-a-route", "kept-route-waits-on-the-region"])
def test_may_judge_answers_as_the_engine_decides(tmp_path: Path, text: str, outcome: str, judged: bool,
                                                 fail: tuple[str, ...]) -> None:
    asked, routed = _judged_by_deciding(tmp_path, text, outcome, fail)
    assert asked is judged
    assert may_judge(load(text).spec, None, "review", outcome, routed=routed) is judged
    assert may_judge(load(text).spec, None, "review", outcome) is judged  # the spec alone says the same here


def test_a_revise_keeps_only_a_route_that_was_taken(tmp_path: Path) -> None:
    """`pre` succeeded, so no route went to the judged `check`: the revise runs nothing judged
    here, and the run's routes say so (before, the route was counted as taken, and `gate revise`
    of a run driven with a judge of its --agents module was refused without it: review s13a F2).
    The spec alone cannot tell, and still says a judge may be needed."""
    asked, routed = _judged_by_deciding(tmp_path, KEPT_ROUTE, "revise", ())
    assert (asked, routed) == (False, {})
    assert may_judge(load(KEPT_ROUTE).spec, None, "review", "revise", routed=routed) is False
    assert may_judge(load(KEPT_ROUTE).spec, None, "review", "revise") is True


def test_a_decision_that_releases_a_judged_step_is_refused_without_the_runs_judge(tmp_path: Path) -> None:
    """Through the CLI: `lockgate gate approve` of a run driven with a judge of its --agents
    module, given no module, is refused before anything is decided (before, it approved with no
    judge: `audit`'s judged ensure failed closed and the run failed)."""
    (tmp_path / "flow.stratum.yaml").write_text(WHEN_GATE)
    (tmp_path / "agents.py").write_text('def w(task):\n    return {"answer": "a"}\n\n'
                                        'def judge(task):\n    return {"holds": True, "reason": "ok"}\n')
    store = str(tmp_path / "runs.db")
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--agents", "agents.py", "--judge", "judge",
                        "--store", store, "--no-prompt")
    assert started.returncode == 3, started.stderr
    run_id = json.loads(started.stdout)["run_id"]
    refused = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--store", store)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "run this command again with --agents agents.py" in refused.stderr
    approved = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--agents", "agents.py", "--store", store)
    assert approved.returncode == 0, approved.stderr
    shown = json.loads(_lockgate(tmp_path, "show", run_id, "--store", store, "--format", "json").stdout)
    assert shown["status"]["status"] == "complete"


ERRED = BRANCHES.replace("when: \"result.recover.answer == 'never'\"", "when: \"1 / (len(result.recover.answer) - 1) > 0\"")


def test_why_gives_the_error_of_a_when_that_failed_not_that_it_was_false(tmp_path: Path) -> None:
    """A ``when`` whose evaluation fails skips its step as a false one does; ``why`` said only
    that it "is not true", where the skipped event gives the error (session 12's weak point)."""
    engine = Engine(store=open_store(str(tmp_path / "runs.db")))
    run_id = _at_gate(engine, ERRED, fail=("build",))
    polish = next(skip for skip in engine.why(run_id)["skipped"] if skip["step_id"] == "polish")
    assert polish["reason"] == _skip_events(engine, run_id)["polish"]
    assert polish["reason"].startswith('when "1 / (len(result.recover.answer) - 1) > 0" failed: ')
    assert "zero" in polish["reason"]
    engine.close()


def test_why_works_out_the_reasons_of_a_run_stored_before_records_kept_them(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    engine = Engine(store=open_store(str(store)))
    run_id = _at_gate(engine, BRANCHES, fail=("build",))
    engine.close()
    with sqlite3.connect(store) as db:
        assert db.execute("UPDATE steps SET record = json_remove(record, '$.skip_reason') "
                          "WHERE record LIKE '%skip_reason%'").rowcount == 3
    engine = Engine(store=open_store(str(store)))
    assert [(skip["step_id"], skip["reason"]) for skip in engine.why(run_id)["skipped"]] == [
        ("deploy", "dependency build failed and was routed to its on_fail step"),
        ("polish", "when \"result.recover.answer == 'never'\" is not true")]
    engine.close()
