"""A gate's revise note travels with the work it sends back: the dispatch's ``revision`` field,
persisted with the step, so it survives a restart and reaches the runner's agents."""

from __future__ import annotations

from pathlib import Path

from lockgate.engine import Engine
from lockgate.engine.agents import ScriptedAgent
from lockgate.engine.runner import make_runner, run
from lockgate.engine.store import open_store

HEAD = """
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
"""

GATED = HEAD + """  main:
    input: {}
    output:
      from: "${polish.output}"
      contract: Note
    max_rounds: 5
    steps:
      - id: draft
        do: "draft"
        out: Note
      - id: polish
        do: "polish ${draft.output.text}"
        out: Note
      - id: review
        after: [polish]
        gate:
          on_approve: null
          on_revise: draft
          on_kill: null
"""

FANOUT = HEAD + """  main:
    input:
      items: string[]
    output:
      from: "${draft.output}"
      contract: Note
    max_rounds: 5
    steps:
      - id: draft
        do: "draft"
        out: Note
      - id: fan
        after: [draft]
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "check ${item}"
              out: Note
      - id: review
        after: [fan]
        gate:
          on_approve: null
          on_revise: fan
          on_kill: null
"""

SUBFLOW = HEAD + """  main:
    input: {}
    output:
      from: "${wrap.output}"
      contract: Note
    max_rounds: 5
    steps:
      - id: wrap
        run: child
        with:
          subject: "owls"
      - id: review
        after: [wrap]
        gate:
          on_approve: null
          on_revise: wrap
          on_kill: null
  child:
    input:
      subject: string
    output:
      from: "${inner.output}"
      contract: Note
    steps:
      - id: inner
        do: "inner ${input.subject}"
        out: Note
"""


def _gate(engine: Engine, run_id: str) -> dict:
    return engine.status(run_id)["gates"][0]


def _dispatches(response: dict) -> dict[str, dict]:
    return {entry["step_id"]: entry for entry in [response, *response.get("ready", [])] if "token" in entry}


def test_revised_work_carries_the_gates_note_across_a_restart_and_retries(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    engine = Engine(store=open_store(db))
    first = engine.plan(GATED, {})
    run_id = first["run_id"]
    assert "revision" not in first
    polish = engine.step_done(run_id, "draft", {"text": "d1"}, first["token"])
    assert "revision" not in polish
    engine.step_done(run_id, "polish", {"text": "p1"}, polish["token"])
    revised = engine.gate_resolve(run_id, "review", "revise", "tighter, please", "alice", _gate(engine, run_id)["token"])
    note = {"gate": "review", "note": "tighter, please", "round": 1}
    assert revised["step_id"] == "draft" and revised["revision"] == note
    assert revised["ready"][0]["revision"] == note
    engine.close()

    again = Engine(store=open_store(db))
    resumed = again.resume(run_id)
    assert resumed["step_id"] == "draft" and resumed["revision"] == note
    retry = again.step_done(run_id, "draft", {"wrong": 1}, resumed["token"])
    assert retry["status"] == "schema_failed" and retry["revision"] == note
    assert retry["previous_failure"]["kind"] == "schema"
    downstream = again.step_done(run_id, "draft", {"text": "d2"}, retry["token"])
    assert downstream["step_id"] == "polish" and downstream["revision"] == note
    again.step_done(run_id, "polish", {"text": "p2"}, downstream["token"])
    second = again.gate_resolve(run_id, "review", "revise", "", "bob", _gate(again, run_id)["token"])
    assert second["revision"] == {"gate": "review", "note": "", "round": 2}
    stored = again.store.load_run(run_id).steps["draft"]
    assert stored["revision"] == {"gate": "review", "note": "", "round": 2}


def test_fanout_items_and_subflow_children_carry_the_revision_of_their_reset_step() -> None:
    engine = Engine()
    run_id = engine.plan(FANOUT, {"items": ["a", "b"]})["run_id"]
    fan = engine.step_done(run_id, "draft", {"text": "d"}, engine.status(run_id)["token"])
    for entry in fan["ready"]:
        engine.step_done(run_id, entry["step_id"], {"text": "ok"}, entry["token"])
    revised = engine.gate_resolve(run_id, "review", "revise", "check harder", "alice", _gate(engine, run_id)["token"])
    items = _dispatches(revised)
    assert set(items) == {"fan/0", "fan/1"}
    assert all(e["revision"] == {"gate": "review", "note": "check harder", "round": 1} for e in items.values())

    run_id = engine.plan(SUBFLOW, {})["run_id"]
    inner = engine.status(run_id)
    assert inner["step_id"] == "wrap/inner" and "revision" not in inner
    engine.step_done(run_id, "wrap/inner", {"text": "v1"}, inner["token"])
    revised = engine.gate_resolve(run_id, "review", "revise", "redo it", "alice", _gate(engine, run_id)["token"])
    assert revised["step_id"] == "wrap/inner"
    assert revised["revision"] == {"gate": "review", "note": "redo it", "round": 1}


async def test_the_runner_gives_an_agent_the_note_of_a_revise_made_elsewhere(tmp_path: Path) -> None:
    spec = GATED.replace('do: "draft"', 'do: "draft"\n        agent: writer').replace(
        'do: "polish ${draft.output.text}"', 'do: "polish ${draft.output.text}"\n        agent: writer')
    store = open_store(tmp_path / "runs.db")
    writer = ScriptedAgent({"draft": [{"text": "d1"}, {"text": "d2"}], "polish": [{"text": "p1"}, {"text": "p2"}]})
    waiting = await run(spec, {}, agents={"writer": writer}, store=store)
    assert waiting.status == "await_gate"
    other = Engine(store=open_store(tmp_path / "runs.db"))
    other.gate_resolve(waiting.run_id, "review", "revise", "shorter", "alice", waiting.waiting_gates[0]["token"])
    runner = make_runner(store=store, agents={"writer": writer})
    again = await runner.resume(waiting.run_id)
    assert again.status == "await_gate"
    redone = writer.calls[2:]
    assert [c.step_id for c in redone] == ["draft", "polish"]
    assert all(c.previous_failure == "revision requested at gate 'review': shorter" for c in redone)
    assert all(c.previous_failure is None for c in writer.calls[:2])
