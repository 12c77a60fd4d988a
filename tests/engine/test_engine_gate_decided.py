"""A decision under a gate token already decided: the same decision is a duplicate, a different
one lost to it and says so; neither changes anything."""

from pathlib import Path

import pytest

from lockgate.engine import Engine
from lockgate.engine.store import open_store
from lockgate.errors import StaleToken

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
