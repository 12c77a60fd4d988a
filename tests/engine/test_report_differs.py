"""A report under a token that already accepted a different result is refused as such (reason
``differs``: yours was not applied), not as a duplicate of it; a true repeat still is a duplicate.
For a step, a fanout item's stage, a failure report, and a report held first for a judge."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.engine import Engine
from lockgate.engine.store import MemoryStore
from lockgate.errors import StaleToken

STEPS = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${b.output}", contract: Note}
    steps:
      - {id: a, do: "write", out: Note}
      - {id: b, after: [a], do: "polish", out: Note}
"""

FANOUT = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {names: "string[]"}
    output: {from: "${fan.output[0]}", contract: Note}
    steps:
      - id: fan
        fanout:
          over: "${input.names}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          steps:
            - {do: "draft ${item}", out: Note}
            - {do: "polish ${item}", out: Note}
"""

JUDGED = STEPS.replace('{id: a, do: "write", out: Note}',
                       '{id: a, do: "write", out: Note, ensure: [{judged: {statement: "fine"}}]}')


def holds(statement: str, stakes: str, result: Any, input: Any) -> dict[str, Any]:
    return {"holds": True, "reason": "fine"}


def refusal(engine: Engine, run_id: str, step: str, token: str, result: Any, failure: Any = None) -> StaleToken:
    with pytest.raises(StaleToken) as refused:
        engine.step_done(run_id, step, result, token, failure=failure)
    return refused.value


@pytest.mark.parametrize("judge", [None, holds], ids=["plain", "held-for-a-judge"])
def test_a_different_result_under_an_accepted_token_says_it_was_not_applied(judge: Any) -> None:
    engine = Engine(store=MemoryStore(), judge=judge)
    plan = engine.plan(JUDGED if judge else STEPS, {})
    run_id, token = plan["run_id"], plan["token"]
    engine.step_done(run_id, "a", {"text": "first"}, token)

    other = refusal(engine, run_id, "a", token, {"text": "second"})
    assert other.detail["reason"] == "differs"
    assert other.message == ("a different result was accepted first for step a under this token; your result was "
                             "not applied and nothing changed")
    failed = refusal(engine, run_id, "a", token, None, failure="could not do it")
    assert failed.detail["reason"] == "differs" and "your failure report was not applied" in failed.message
    same = refusal(engine, run_id, "a", token, {"text": "first"})
    assert same.detail["reason"] == "duplicate"
    assert "already accepted the result for this token (duplicate)" in same.message
    trace = {t["step_id"]: t for t in engine.audit(run_id)["trace"]}
    assert trace["a"]["output"] == {"text": "first"}


def test_a_fanout_item_compares_with_the_stage_result_it_accepted() -> None:
    engine = Engine(store=MemoryStore())
    plan = engine.plan(FANOUT, {"names": ["x", "y"]})
    run_id = plan["run_id"]
    first = {e["step_id"]: e for e in plan["ready"]}["fan/0"]
    nxt = engine.step_done(run_id, "fan/0", {"text": "draft"}, first["token"])
    second = {e["step_id"]: e for e in nxt["ready"]}["fan/0"]
    engine.step_done(run_id, "fan/0", {"text": ""}, second["token"], failure="stage 2 failed once")

    assert refusal(engine, run_id, "fan/0", first["token"], {"text": "draft"}).detail["reason"] == "duplicate"
    assert refusal(engine, run_id, "fan/0", first["token"], {"text": "other"}).detail["reason"] == "differs"
