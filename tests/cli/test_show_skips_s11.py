"""``lockgate show`` says why a step was skipped and what the steps a gate's revise reset did in
the rounds before (review r3 #6: the reason was only in ``lockgate audit``'s events, and after a
revise the table showed one attempt and no failure while the run had spent more)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cli_support import lockgate_argv, lockgate_env

from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${work.output}", contract: Note}
    max_rounds: 3
    steps:
      - id: work
        do: "write about ${input.topic}"
        out: Note
      - id: polish
        after: [work]
        when: "input.topic == 'never'"
        do: "polish"
        out: Note
      - id: review
        after: [work]
        gate: {on_approve: null, on_revise: work, on_kill: null}
"""


def _revised_run(store: Path) -> str:
    """A finished run: work fails once then succeeds, polish is skipped by its ``when``, the
    review revises once (work runs again, polish is skipped again) and then approves."""
    engine = Engine(store=open_store(str(store)))
    run_id = engine.plan(SPEC, {"topic": "tides"})["run_id"]
    results = iter([("too short", None), (None, {"text": "one"}), (None, {"text": "two"})])
    decisions = iter(["revise", "approve"])
    status = engine.status(run_id)
    while status["status"] != "complete":
        if status["status"] == "await_gate":
            gate = status["gates"][0]
            engine.gate_resolve(run_id, gate["step_id"], next(decisions), "go on", "human", gate["token"])
        else:
            failure, result = next(results)
            entry = status["ready"][0]
            engine.step_done(run_id, entry["step_id"], result, entry["token"], failure=failure)
        status = engine.status(run_id)
    engine.close()
    return run_id


def test_show_says_why_a_step_was_skipped_and_what_earlier_rounds_did(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    run_id = _revised_run(store)
    shown = subprocess.run(lockgate_argv("show", run_id, "--store", str(store)), capture_output=True,
                           text=True, env=lockgate_env(), cwd=tmp_path, timeout=60)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "work    do    succeeded  1" in shown.stdout  # the table: this round's one attempt
    skipped = lines.index("why skipped:")
    assert lines[skipped + 1] == """  polish  when "input.topic == 'never'" is not true"""
    earlier = lines.index("earlier rounds:")
    assert lines[earlier + 1:earlier + 4] == [
        "  work    1 round: succeeded; 2 attempts; last failure: agent reported failure: too short",
        "  polish  1 round: skipped",
        "  review  1 round: revised",  # the decision that ended the round (review s12 late #2)
    ]


def test_show_of_a_run_never_revised_or_skipped_adds_nothing(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    engine = Engine(store=open_store(str(store)))
    run_id = engine.plan(SPEC.replace("'never'", "'tides'"), {"topic": "tides"})["run_id"]
    engine.close()
    shown = subprocess.run(lockgate_argv("show", run_id, "--store", str(store)), capture_output=True,
                           text=True, env=lockgate_env(), cwd=tmp_path, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "why skipped:" not in shown.stdout and "earlier rounds:" not in shown.stdout
