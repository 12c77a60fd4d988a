"""A call that issues nothing answers with the first outstanding dispatch; that answer is built
once per issuance and handed out as copies, so it stays right and callers cannot damage it."""

from __future__ import annotations

from lockgate.engine import Engine

FANOUT = """
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input:
      items: string[]
    output:
      from: "${fan.output[0]}"
      contract: Note
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 3
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "check ${item}"
              out: Note
"""


def test_the_standing_dispatch_is_rebuilt_per_issuance_and_given_out_as_copies() -> None:
    engine = Engine()
    plan = engine.plan(FANOUT, {"items": ["a", "b", "c"]})
    run_id, tokens = plan["run_id"], {e["step_id"]: e["token"] for e in plan["ready"]}
    first = engine.step_done(run_id, "fan/2", {"text": "ok"}, tokens["fan/2"])
    assert first["step_id"] == "fan/0" and first["task"] == "check a" and first["ready"] == []
    first["task"] = "tampered"
    first["ensure"].append("tampered")
    first["output_fields"]["extra"] = "tampered"
    second = engine.step_done(run_id, "fan/1", {"text": "ok"}, tokens["fan/1"])
    assert second["step_id"] == "fan/0" and second["task"] == "check a" and second["token"] == tokens["fan/0"]
    assert second["ensure"] == [] and second["output_fields"] == {"text": "string"}
    retry = engine.step_done(run_id, "fan/0", {"wrong": 1}, tokens["fan/0"])
    assert retry["status"] == "schema_failed" and retry["attempt"] == 2 and retry["token"] != tokens["fan/0"]
    status = engine.status(run_id)
    assert status["token"] == retry["token"] and status["attempt"] == 2
    assert status["previous_failure"]["kind"] == "schema"
    done = engine.step_done(run_id, "fan/0", {"text": "ok"}, retry["token"])
    assert done["status"] == "complete" and done["output"] == {"text": "ok"}


PAIR = """
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input: {}
    output:
      from: "${last.output}"
      contract: Note
    steps:
      - id: alpha
        do: "a"
        out: Note
      - id: beta
        do: "b"
        out: Note
      - id: last
        after: [alpha, beta]
        do: "l"
        out: Note
"""


def test_the_ready_list_keeps_declaration_order_live_and_after_a_reload(tmp_path) -> None:
    """A retried step keeps its place in ready[] (root steps in declaration order, items in
    index order, semantics §6.2), whether the engine issued it just now or reloaded the run."""
    from lockgate.engine.store import open_store

    store = open_store(tmp_path / "order.db")
    engine = Engine(store=store)
    first = engine.plan(PAIR, {})
    run = first["run_id"]
    alpha = next(e for e in first["ready"] if e["step_id"] == "alpha")
    engine.step_done(run, "alpha", None, alpha["token"], failure="flaky")
    live = [(e["step_id"], e["attempt"]) for e in engine.status(run)["ready"]]
    reloaded = Engine(store=open_store(tmp_path / "order.db"))
    assert live == [("alpha", 2), ("beta", 1)]
    assert [(e["step_id"], e["attempt"]) for e in reloaded.status(run)["ready"]] == live
    assert [(e["step_id"], e["attempt"]) for e in reloaded.resume(run)["ready"]] == live
    reloaded.close()
    engine.close()


def test_fanout_items_are_ready_in_index_order_after_a_retry() -> None:
    engine = Engine()
    first = engine.plan(FANOUT, {"items": ["x", "y"]})
    run = first["run_id"]
    item0 = next(e for e in first["ready"] if e["step_id"] == "fan/0")
    engine.step_done(run, "fan/0", None, item0["token"], failure="flaky")
    assert [e["step_id"] for e in engine.status(run)["ready"]] == ["fan/0", "fan/1"]
