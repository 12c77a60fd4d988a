"""The audit tells a gate decision made over MCP from one made at the CLI (``decided_via``), since
``resolved_by`` is whatever the agent says (it may call itself "human"); `lockgate audit` shows it
on the event's line."""

from __future__ import annotations

from pathlib import Path

from mcp_support import REVIEWED, Session, connect, lockgate_cli


async def gate(s: Session) -> tuple[str, str]:
    plan = await s.ok("lockgate_plan", {"spec": REVIEWED, "inputs": {"text": "t"}})
    waiting = await s.ok("lockgate_step_done", {"run_id": plan["run_id"], "step_id": "work", "token": plan["token"],
                                                "result": {"result": "done", "quality_score": 0.9}})
    return plan["run_id"], waiting["token"]


async def test_the_audit_says_which_surface_a_gate_decision_came_through(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    async with connect(store, tmp_path) as s:
        by_agent, token = await gate(s)
        await s.ok("lockgate_gate_resolve", {"run_id": by_agent, "step_id": "review", "outcome": "approve",
                                             "rationale": "the agent approved its own work", "resolved_by": "human",
                                             "token": token})
        by_person, _ = await gate(s)
        assert lockgate_cli("gate", "approve", by_person, "review", "--store", str(store)).returncode == 0

        for run, via in ((by_agent, "mcp"), (by_person, "cli")):
            audit = await s.ok("lockgate_audit", {"run_id": run})
            [event] = [e for e in audit["events"] if e["type"] == "gate_resolved"]
            assert event["detail"]["decided_via"] == via and event["detail"]["resolved_by"] == "human"
            shown = lockgate_cli("audit", run, "--store", str(store))
            [line] = [line for line in shown.stdout.splitlines() if "gate_resolved" in line]
            assert f'{{"decided_via": "{via}", "decision": "approve"' in line
            assert lockgate_cli("verify", run, "--store", str(store)).returncode == 0
