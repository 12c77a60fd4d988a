"""Two servers on one store answer the same dispatch: the one whose result came second is told a
different result was accepted first and its own was not applied, not that its result "was
already accepted" (a duplicate, nothing more to do); a true repeat is still a duplicate."""

from __future__ import annotations

from pathlib import Path

from mcp_support import CHECKED, connect


async def test_a_different_result_under_a_used_token_is_not_called_a_duplicate(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    async with connect(store, tmp_path) as first, connect(store, tmp_path) as second:
        plan = await first.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        report = {"run_id": plan["run_id"], "step_id": "a", "token": plan["token"]}
        await second.ok("lockgate_step_done", {**report, "result": {"text": "second's note"}})

        message, data = await first.refused("lockgate_step_done", {**report, "result": {"text": "first's note"}})
        assert data["error_type"] == "stale_token" and data["reason"] == "differs"
        assert message.startswith("stale_token: a different result was accepted first for step a under this token; "
                                  "your result was not applied and nothing changed\n")
        assert "yours was not applied" in message and "lockgate_audit" in message
        assert "already accepted" not in message and "nothing more to do" not in message

        message, data = await first.refused("lockgate_step_done", {**report, "failure": "could not"})
        assert data["reason"] == "differs" and "your failure report was not applied" in message

        message, data = await first.refused("lockgate_step_done", {**report, "result": {"text": "second's note"}})
        assert data["reason"] == "duplicate" and "That result was already accepted" in message
        audit = await first.ok("lockgate_audit", {"run_id": plan["run_id"]})
        assert {t["step_id"]: t.get("output") for t in audit["trace"]}["a"] == {"text": "second's note"}
