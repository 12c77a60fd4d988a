"""A decision under a gate token already decided: the same decision is a duplicate, a different
one lost to it and says so; neither changes anything."""

from pathlib import Path

import pytest

from lockgate.engine import Engine
from lockgate.engine.store import open_store
from lockgate.errors import EngineError, StaleToken

REVIEWED = (Path(__file__).resolve().parents[2] / "examples" / "reviewed-work.stratum.yaml").read_text()


@pytest.mark.parametrize("first", ["approve", "revise", "kill"])
def test_a_different_decision_under_a_decided_token_names_the_one_taken(first):
    engine = Engine(store=open_store("memory"))
    resp = engine.plan(REVIEWED, {"text": "t"})
    run = resp["run_id"]
    gate = engine.step_done(run, "work", {"result": "r", "quality_score": 0.9}, resp["token"])
    engine.gate_resolve(run, "review", first, "because", "ana", gate["token"])
    version = engine.store.current_version(run)
    for other in {"approve", "revise", "kill"} - {first}:
        with pytest.raises(StaleToken) as lost:
            engine.gate_resolve(run, "review", other, "", "bot", gate["token"])
        assert lost.value.detail["reason"] == "decided" and lost.value.detail["decision"] == first
        assert f"already decided for this token: {first} by ana (because); your {other} was not applied" in str(lost.value)
    with pytest.raises(StaleToken) as again:
        engine.gate_resolve(run, "review", first, "", "bot", gate["token"])
    assert again.value.detail["reason"] == "duplicate"
    assert engine.store.current_version(run) == version


def _gate_spec(on_revise: str, gate_rounds: int = 2) -> str:
    return REVIEWED.replace("on_revise: work", f"on_revise: {on_revise}").replace(
        "max_rounds: 2", f"max_rounds: {gate_rounds}")


def _at_gate(engine: Engine, spec: str) -> dict:
    resp = engine.plan(spec, {"text": "t"})
    return engine.step_done(resp["run_id"], "work", {"result": "r", "quality_score": 0.9}, resp["token"])


def test_a_gate_offers_revise_only_while_it_sends_the_work_back():
    engine = Engine(store=open_store("memory"))
    gate = _at_gate(engine, _gate_spec("work", gate_rounds=1))
    assert gate["decisions"] == ["approve", "revise", "kill"] and "revise_unavailable" not in gate
    work = engine.gate_resolve(gate["run_id"], "review", "revise", "again", "ana", gate["token"])
    again = engine.step_done(gate["run_id"], "work", {"result": "r", "quality_score": 0.9}, work["token"])
    assert again["decisions"] == ["approve", "kill"]
    assert again["revise_unavailable"] == "revise would fail the run: the gate's 1 revision round(s) are used up"
    assert engine.status(gate["run_id"])["decisions"] == ["approve", "kill"]


def test_a_gate_without_a_revise_target_neither_offers_nor_takes_revise():
    engine = Engine(store=open_store("memory"))
    gate = _at_gate(engine, _gate_spec("null"))
    assert gate["decisions"] == ["approve", "kill"]
    assert gate["revise_unavailable"] == "the gate has no on_revise target"
    with pytest.raises(EngineError) as refused:
        engine.gate_resolve(gate["run_id"], "review", "revise", "", "ana", gate["token"])
    assert refused.value.error_type == "revise_unavailable"
    assert engine.status(gate["run_id"])["status"] == "await_gate"

