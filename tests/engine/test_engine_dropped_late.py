"""A late answer for a fanout item or subflow child that a revise withdrew (its record is a
tombstone) is refused as a stale token (semantics §6.12), not as an unknown step, before and
after the run is loaded again; it changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lockgate.engine import Engine
from lockgate.engine.store import open_store
from lockgate.errors import EngineError, StaleToken

SPEC = """
version: 1
contracts:
  Note: {text: string}
  Items: {xs: "string[]"}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${last.output}", contract: Note}
    max_rounds: 3
    steps:
      - id: plan
        do: "plan"
        out: Items
      - id: fan
        fanout:
          over: "${plan.output.xs}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "work ${item}"
              out: Note
      - id: child
        after: [plan]
        run: sub
        with: {topic: "${input.topic}"}
      - id: review
        after: [plan]
        gate: {on_approve: null, on_revise: plan, on_kill: null}
      - id: last
        after: [fan, child, review]
        do: "last"
        out: Note
  sub:
    input: {topic: string}
    output: {from: "${a.output}", contract: Note}
    steps:
      - id: a
        do: "a ${input.topic}"
        out: Note
      - id: ok
        after: [a]
        gate: {on_approve: null, on_revise: null, on_kill: null}
"""


def _tokens(engine: Engine, run: str) -> dict[str, str]:
    status = engine.status(run)
    return {e["step_id"]: e["token"] for e in (*status.get("ready", []), *status.get("gates", []))}


def _revised_with_work_in_flight(engine: Engine) -> tuple[str, dict[str, str]]:
    """A run whose revise withdrew fanout items, a subflow child (answered already) and a child
    gate in flight; the tokens they were issued."""
    run = engine.plan(SPEC, {"topic": "t"})["run_id"]
    engine.step_done(run, "plan", {"xs": ["p", "q"]}, _tokens(engine, run)["plan"])
    first = _tokens(engine, run)
    engine.step_done(run, "child/a", {"text": "a"}, first["child/a"])
    old = {**first, **_tokens(engine, run)}
    assert {"fan/0", "fan/1", "child/ok", "review"} <= set(old)
    engine.gate_resolve(run, "review", "revise", "again", "test", old["review"])
    assert engine.status(run)["status"] == "execute_step"
    return run, old


def _refusal(engine: Engine, run: str, key: str, token: Any) -> StaleToken:
    version = engine.store.current_version(run)
    with pytest.raises(StaleToken) as refused:
        if key == "child/ok":
            engine.gate_resolve(run, key, "approve", "late", "test", token)
        else:
            engine.step_done(run, key, {"text": "late"}, token)
    assert engine.store.current_version(run) == version
    return refused.value


@pytest.mark.parametrize("key", ["fan/0", "fan/1", "child/a", "child/ok"])
def test_a_late_answer_for_withdrawn_work_is_stale(key: str) -> None:
    engine = Engine()
    run, old = _revised_with_work_in_flight(engine)
    refused = _refusal(engine, run, key, old[key])
    assert refused.detail["reason"] == "stale" and refused.detail["step_id"] == key
    owner = key.split("/")[0]
    assert str(refused) == (f"token is stale: step {key} was withdrawn when {owner} was reset or started again; "
                            "nothing changed")


def test_withdrawn_work_without_a_token_is_missing_one_and_unknown_keys_stay_unknown() -> None:
    engine = Engine()
    run, _ = _revised_with_work_in_flight(engine)
    assert _refusal(engine, run, "fan/1", None).detail["reason"] == "missing"
    with pytest.raises(EngineError) as unknown:
        engine.step_done(run, "fan/7", {"text": "late"}, "0" * 20)
    assert unknown.value.error_type == "unknown_step"


def test_withdrawn_work_stays_stale_after_a_reload_and_the_run_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run, old = _revised_with_work_in_flight(Engine(store=open_store(db)))
    engine = Engine(store=open_store(db))
    assert _refusal(engine, run, "fan/1", old["fan/1"]).detail["reason"] == "stale"
    engine.step_done(run, "plan", {"xs": ["r"]}, _tokens(engine, run)["plan"])
    fresh = _tokens(engine, run)
    assert _refusal(engine, run, "fan/0", old["fan/0"]).detail["reason"] == "stale"  # fan/0 is issued anew
    engine.step_done(run, "fan/0", {"text": "w"}, fresh["fan/0"])
    engine.step_done(run, "child/a", {"text": "a2"}, fresh["child/a"])
    engine.gate_resolve(run, "child/ok", "approve", "", "test", _tokens(engine, run)["child/ok"])
    engine.gate_resolve(run, "review", "approve", "", "test", fresh["review"])
    done = engine.step_done(run, "last", {"text": "end"}, _tokens(engine, run)["last"])
    assert done["status"] == "complete"
