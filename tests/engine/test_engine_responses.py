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
