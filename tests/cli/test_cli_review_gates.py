"""What a newcomer's review found about gates at the command line: ``why`` shows the round limit
the engine enforces (the gate's or the flow's ``max_rounds``, whichever a revise meets first)
and offers no revise once none is left; a revise past the limit fails the run (semantics §6.7)
and ``lockgate gate revise`` says so and exits 1; ``gate kill`` is ``gate reject``; a decision
on a run that ended says how it ended; ``why`` on a finished run says its failure once."""

from __future__ import annotations

import pytest
from cli_support import gate_spec
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.dsl.loader import load
from lockgate.engine.engine import Engine
from lockgate.engine.store import open_store


def spec(flow_rounds: int, gate_rounds: int) -> str:
    """A draft reviewed by gate ``review``, which may send it back ``gate_rounds`` times, in a
    flow allowing ``flow_rounds`` revision rounds."""
    return gate_spec(revise_to="draft", flow_rounds=flow_rounds, gate_rounds=gate_rounds)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    return str(tmp_path / "runs.db")


def invoke(store: str, *args: str):
    return CliRunner().invoke(main, [*args, "--store", store], catch_exceptions=False)


def at_gate(store: str, text: str, revisions: int = 0) -> str:
    """A run of ``text`` waiting at its gate after ``revisions`` revises (driven by the engine)."""
    engine = Engine(store=open_store(store))
    first = engine.plan(load(text).spec, {"topic": "x"})
    run = first["run_id"]
    engine.step_done(run, "draft", {"text": "t"}, first["token"])
    for round_ in range(revisions):
        engine.resolve_waiting_gate(run, "review", "revise", f"again {round_}")
        engine.step_done(run, "draft", {"text": "t"}, engine.status(run)["token"])
    engine.close()
    return run


def gate_wait(store: str, run: str) -> list[str]:
    """The lines ``lockgate why`` prints about the gate's wait."""
    why = invoke(store, "why", run)
    assert why.exit_code == 0, why.stderr
    return why.stdout.splitlines()[1:]


def test_why_counts_against_the_gates_limit_when_it_is_the_smaller(store):
    run = at_gate(store, spec(3, 2), revisions=1)
    reason, *commands = gate_wait(store, run)
    assert reason == "- gate review waits for a decision (round 1/2, the gate's max_rounds)"
    assert [line.split()[2] for line in commands] == ["approve", "revise", "reject"]


def test_why_counts_against_the_flows_limit_when_it_is_the_smaller(store):
    run = at_gate(store, spec(1, 2))
    reason, _, _, _ = gate_wait(store, run)
    assert reason == "- gate review waits for a decision (round 0/1, the flow's max_rounds)"


def test_with_no_round_left_why_offers_no_revise_and_says_what_one_would_do(store):
    run = at_gate(store, spec(3, 2), revisions=2)
    reason, *commands = gate_wait(store, run)
    assert reason == ("- gate review waits for a decision (round 2/2, the gate's max_rounds); revise would "
                      "fail the run: the gate's 2 revision round(s) are used up")
    assert [line.split()[2] for line in commands] == ["approve", "reject"]
    status = Engine(store=open_store(store)).status(run)
    assert status["round_limit"] == {"used": 2, "max": 2, "set_by": "gate"} and status["rounds_left"] == 0


def test_a_revise_past_the_limit_fails_the_run_and_the_command_says_so(store):
    run = at_gate(store, spec(3, 2), revisions=2)
    revised = invoke(store, "gate", "revise", run, "review", "--note", "once more")
    assert revised.exit_code == 1
    assert revised.stdout == f"run {run}: failed (rounds_exhausted): gate revision rounds exhausted\n"
    assert revised.stderr == (f"error: the revise ended run {run}: gate review had no revision round left "
                              "(the gate's 2 revision round(s) are used up)\n")


def test_a_revise_within_the_limit_still_exits_0(store):
    run = at_gate(store, spec(3, 2), revisions=1)
    revised = invoke(store, "gate", "revise", run, "review", "--note", "once more")
    assert revised.exit_code == 0, revised.stderr
    assert revised.stdout.startswith(f"run {run}: 1 step(s) to execute: draft")


def test_the_resolving_commands_note_that_revise_is_not_offered(store):
    run = at_gate(store, spec(3, 2), revisions=2)
    resumed = invoke(store, "resume", run)
    assert resumed.exit_code == 0, resumed.stderr
    lines = resumed.stdout.splitlines()
    decided = lines.index(f"  lockgate gate approve {run} review --store {store}")
    assert lines[decided:decided + 4] == [
        f"  lockgate gate approve {run} review --store {store}",
        f"  lockgate gate reject {run} review --store {store}",
        "  (revise would fail the run: the gate's 2 revision round(s) are used up)",
        f"then continue it with: lockgate run --resume {run} --store {store} --agents <your agents module>",
    ]


def test_gate_kill_is_gate_reject(store):
    run = at_gate(store, spec(3, 2))
    killed = invoke(store, "gate", "kill", run, "review", "--note", "no")
    assert killed.exit_code == 0, killed.stderr
    assert killed.stdout == f"run {run}: killed (gate review killed flow)\n"


@pytest.mark.parametrize(("end", "said"), [
    (lambda engine, run: engine.cancel(run), "was cancelled"),
    (lambda engine, run: engine.resolve_waiting_gate(run, "review", "kill"), "was killed"),
    (lambda engine, run: engine.resolve_waiting_gate(run, "review", "approve"), "is complete"),
])
def test_a_decision_on_a_run_that_ended_says_how_it_ended(store, end, said):
    run = at_gate(store, spec(3, 2))
    engine = Engine(store=open_store(store))
    end(engine, run)
    engine.close()
    approved = invoke(store, "gate", "approve", run, "review")
    assert approved.exit_code == 1
    assert approved.stderr.startswith(f"error: run {run} {said}; its gates take no more decisions")
    decided = said != "was cancelled"  # the decision that ended it is named, and the loser told
    assert approved.stderr.endswith("); your approve was not applied\n" if decided else "decisions\n")


def test_why_on_a_killed_run_says_how_it_ended_once(store):
    run = at_gate(store, spec(3, 2))
    invoke(store, "gate", "reject", run, "review")
    why = invoke(store, "why", run)
    assert why.stdout.splitlines() == [
        f"run {run} killed: gate review killed flow",
        "- nothing continues it (it saved no checkpoint); its audit trail shows what happened",
        f"    lockgate audit {run} --store {store}",
    ]


@pytest.mark.parametrize("note", [None, "  "])
def test_a_revise_without_a_note_is_refused_and_changes_nothing(store, note):
    """The note is what the revised step's agent is told to change: without one the agent gets
    no feedback (``previous_failure: null``) and a round is spent. The terminal prompt, the
    notebook buttons and ``%flow revise`` refuse it; so does the command (exit 2)."""
    run = at_gate(store, spec(3, 2))
    revised = invoke(store, "gate", "revise", run, "review", *(["--note", note] if note is not None else []))
    assert revised.exit_code == 2
    assert "a revision needs a note saying what to change (--note TEXT)" in revised.stderr
    assert gate_wait(store, run)[0] == "- gate review waits for a decision (round 0/2, the gate's max_rounds)"


BUDGETED = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${draft.output}", contract: Note}
    max_rounds: 3
    budget: {dispatches: 1}
    steps:
      - {id: draft, do: "write about ${input.topic}", out: Note}
      - id: review
        after: [draft]
        gate: {on_approve: null, on_revise: draft, on_kill: null}
"""


def test_a_revise_that_fails_the_run_otherwise_says_why_not_rounds(store):
    """The revise re-dispatches draft past the flow's budget: the run fails, with rounds left;
    the command names that failure, not a round limit (review s12b F3)."""
    run = at_gate(store, BUDGETED)
    revised = invoke(store, "gate", "revise", run, "review", "--note", "once more")
    assert revised.exit_code == 1
    assert "budget_exhausted" in revised.stdout
    assert revised.stderr.startswith(f"error: the revise ended run {run}: ")
    assert "no revision round left" not in revised.stderr and "budget" in revised.stderr
