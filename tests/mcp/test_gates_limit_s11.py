"""``lockgate_gates``' ``limit`` counts the gates returned, not the running runs looked at (review
s11, finding 2): a run waiting at a gate was left out once newer running runs (steps at work,
runs left unfinished) filled the limit, and with more than 1000 of them no limit showed it."""

from __future__ import annotations

from pathlib import Path

from mcp_support import CHECKED, REVIEWED, connect

from lockgate.dsl.loader import load
from lockgate.engine import Engine
from lockgate.engine.store import open_store

# newer running runs at no gate: more than the first listing of the store holds (its RUNS_BATCH, 100)
NEWER = 130


def _gated_then_busy(store: Path) -> list[str]:
    """Two runs waiting at gate review (oldest first), then NEWER running runs at work; the ids
    of the gated runs, newest first."""
    engine = Engine(store=open_store(store))
    try:
        reviewed, checked = load(REVIEWED).spec, load(CHECKED).spec
        gated = []
        for text in ("first", "second"):
            plan = engine.plan(reviewed, {"text": text})
            done = engine.step_done(plan["run_id"], "work", {"result": "r", "quality_score": 0.9}, plan["token"])
            assert done["status"] == "await_gate"
            gated.append(plan["run_id"])
        for i in range(NEWER):
            assert engine.plan(checked, {"topic": f"t{i}"})["status"] == "execute_step"
        return gated[::-1]
    finally:
        engine.close()


async def test_limit_counts_gates_and_no_waiting_gate_is_left_out(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    newest, oldest = _gated_then_busy(store)
    async with connect(store, tmp_path) as s:
        one = (await s.ok("lockgate_gates", {"limit": 1}))["gates"]
        assert [(g["run_id"], g["step_id"]) for g in one] == [(newest, "review")]
        assert one[0]["token"]
        both = (await s.ok("lockgate_gates", {}))["gates"]
        assert [g["run_id"] for g in both] == [newest, oldest]
        assert (await s.ok("lockgate_gates", {"limit": 2}))["gates"] == both
        assert (await s.ok("lockgate_gates", {"run_id": oldest, "limit": 1}))["gates"][0]["run_id"] == oldest
