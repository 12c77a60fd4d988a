"""Spend reported with a result the run no longer takes (it ended meanwhile) is still recorded:
the work ran, and settling records it in every ledger even over the limit (semantics §6.10)."""

from __future__ import annotations

import pytest
from specs import fan_spec

from lockgate.engine import Engine
from lockgate.engine.agents import AgentResult, Usage
from lockgate.errors import EngineError, StaleToken

BUDGETED = fan_spec(concurrency=3, require="any").replace(
    "    steps:\n      - id: fan\n", "    budget:\n      tokens: 100\n    steps:\n      - id: fan\n")


def _usage_debits(engine: Engine, run: str) -> list[tuple[str, dict]]:
    return [(e["step_id"], e["detail"]["usage"]) for e in engine.audit(run)["events"]
            if e["type"] == "usage_debit"]


def test_a_consumer_result_after_the_flow_budget_ran_out_is_refused_but_its_spend_counts() -> None:
    engine = Engine()
    first = engine.plan(BUDGETED, {"words": ["a", "b", "c"]})
    run, entries = first["run_id"], {e["step_id"]: e for e in first["ready"]}
    engine.step_done(run, "fan/0", {"word": "a"}, entries["fan/0"]["token"], usage={"tokens": 60})
    ended = engine.step_done(run, "fan/1", {"word": "b"}, entries["fan/1"]["token"], usage={"tokens": 60})
    assert ended["status"] == "error" and ended["error_type"] == "budget_exhausted"
    with pytest.raises(EngineError) as refused:
        engine.step_done(run, "fan/2", {"word": "c"}, entries["fan/2"]["token"], usage={"tokens": 60})
    assert refused.value.error_type == "run_finished"
    assert engine.audit(run)["spent"]["tokens"] == 180
    assert _usage_debits(engine, run)[-1] == ("fan/2", {"tokens": 60})
    with pytest.raises(StaleToken, match="duplicate"):  # counted once
        engine.step_done(run, "fan/2", {"word": "c"}, entries["fan/2"]["token"], usage={"tokens": 60})
    assert engine.audit(run)["spent"]["tokens"] == 180
    assert engine.verify(run)["ok"]


def test_a_late_result_without_spend_or_with_a_foreign_token_records_nothing() -> None:
    engine = Engine()
    first = engine.plan(BUDGETED, {"words": ["a", "b", "c"]})
    run, entries = first["run_id"], {e["step_id"]: e for e in first["ready"]}
    engine.step_done(run, "fan/0", {"word": "a"}, entries["fan/0"]["token"], usage={"tokens": 120})
    version = engine.audit(run)["version"]
    for token, usage in ((entries["fan/1"]["token"], None), ("foreign", {"tokens": 5}),
                         (entries["fan/2"]["token"], {"tokens": -1})):
        with pytest.raises(EngineError):
            engine.step_done(run, "fan/1" if usage is None else "fan/2", {"word": "x"}, token, usage=usage)
    assert engine.audit(run)["version"] == version and engine.audit(run)["spent"]["tokens"] == 120


def test_the_engine_records_what_its_own_dispatches_spent_after_the_budget_ran_out() -> None:
    calls = []

    def agent(entry):
        calls.append(entry["step_id"])
        return AgentResult.success({"word": entry["item"]}, usage=Usage(tokens=60))

    engine = Engine(dispatcher=agent)
    done = engine.plan(BUDGETED.replace("dispatch: consumer", "dispatch: engine"), {"words": ["a", "b", "c"]})
    assert done["status"] == "error" and done["error_type"] == "budget_exhausted"
    assert sorted(calls) == ["fan/0", "fan/1", "fan/2"]
    assert engine.audit(done["run_id"])["spent"]["tokens"] == 180
    assert sorted(step for step, _ in _usage_debits(engine, done["run_id"])) == ["fan/0", "fan/1", "fan/2"]
