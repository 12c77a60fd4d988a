"""A revise the gate cannot take, asked for over MCP, is refused with what the agent can do
instead, and the gate still waits on the same token."""

from __future__ import annotations

from pathlib import Path

from mcp_support import connect

NO_TARGET = """
version: 1
contracts:
  V: {v: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: V}
    steps:
      - id: a
        do: "a"
        out: V
      - id: g
        after: [a]
        gate: {on_approve: null, on_revise: null, on_kill: null}
"""


async def test_a_revise_of_a_gate_without_on_revise_is_refused_and_the_gate_still_waits(tmp_path: Path) -> None:
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": NO_TARGET, "inputs": {}})
        run = first["run_id"]
        gate = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "a", "token": first["token"],
                                                 "result": {"v": 1}})
        assert gate["status"] == "await_gate" and gate["decisions"] == ["approve", "kill"]
        decision = {"run_id": run, "step_id": "g", "rationale": "again", "resolved_by": "human",
                    "token": gate["token"]}
        message, data = await s.refused("lockgate_gate_resolve", {**decision, "outcome": "revise"})
        assert data["error_type"] == "revise_unavailable" and data["decisions"] == ["approve", "kill"]
        assert message.startswith("revise_unavailable: gate g cannot be revised: it has no on_revise target")
        assert ("Nothing was changed; the gate still waits with the same token. Tell the user revise is not "
                "possible here and ask them to approve or kill") in message
        done = await s.ok("lockgate_gate_resolve", {**decision, "outcome": "approve"})
        assert done["status"] == "complete"
