"""Why a run was cancelled is kept in its audit."""

from pathlib import Path

import pytest

from lockgate.engine import Engine
from lockgate.engine.store import open_store
from lockgate.errors import EngineError

REVIEWED = (Path(__file__).resolve().parents[2] / "examples" / "reviewed-work.stratum.yaml").read_text()


def test_a_cancel_reason_is_kept_in_the_audit():
    engine = Engine(store=open_store("memory"))
    run = engine.plan(REVIEWED, {"text": "t"})["run_id"]
    assert engine.cancel(run, "the max_outstanding limit was reached")["status"] == "cancelled"
    (event,) = [e for e in engine.store.events(run) if e.type == "flow_cancelled"]
    assert event.detail == {"burned": ["work"], "reason": "the max_outstanding limit was reached"}
    with pytest.raises(EngineError, match="a cancel reason is text"):
        engine.cancel(run, 3)


@pytest.mark.parametrize(("reason", "kept"), [("a\0b", "a\ufffdb"), ("\ud800x", "\ufffdx"), ("x" * 5000, "x" * 1000)])
def test_a_reason_no_store_keeps_is_cleaned_and_the_run_still_cancelled(reason, kept, tmp_path):
    engine = Engine(store=open_store(tmp_path / "runs.db"))
    run = engine.plan(REVIEWED, {"text": "t"})["run_id"]
    assert engine.cancel(run, reason)["status"] == "cancelled"
    (event,) = [e for e in engine.store.events(run) if e.type == "flow_cancelled"]
    assert event.detail["reason"] == kept
