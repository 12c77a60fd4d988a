"""A second, different report under a token already used is refused without blaming another
session (review s11, finding 6): the server cannot know who sent the first report, and most
often it was the same agent "fixing" an answer already accepted."""

from __future__ import annotations

from pathlib import Path

from mcp_support import REVIEWED, connect


async def test_a_changed_report_under_an_accepted_token_is_told_truthfully(tmp_path: Path) -> None:
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        plan = await s.ok("lockgate_plan", {"spec": REVIEWED, "inputs": {"text": "t"}})
        report = {"run_id": plan["run_id"], "step_id": "work", "token": plan["token"]}
        done = await s.ok("lockgate_step_done", {**report, "result": {"result": "r", "quality_score": 0.9}})
        assert done["status"] == "await_gate"

        message, data = await s.refused("lockgate_step_done", {**report, "result": {"result": "better",
                                                                                   "quality_score": 0.95}})
        assert data["error_type"] == "stale_token" and data["reason"] == "differs"
        assert "another session" not in message and "from another" not in message
        assert "An earlier report made with this token (perhaps your own) was accepted" in message
        assert "yours was not applied" in message
        assert "revise" in message and "lockgate_revert" in message
