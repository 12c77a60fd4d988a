"""What a coding agent reads over MCP when a round of an ``iterate`` step ends with its ``until``
not holding yet: the next round to do, not a rejection with no retries left."""

from __future__ import annotations

from pathlib import Path

from mcp_support import connect

ITERATED = """
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
        do: "improve"
        out: V
        iterate: {max: 5, until: "result.v >= 10"}
"""


async def test_a_round_that_does_not_converge_is_the_next_round_to_do(tmp_path: Path) -> None:
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": ITERATED, "inputs": {}})
        raw = await s.raw("lockgate_step_done", {"run_id": first["run_id"], "step_id": "a", "token": first["token"],
                                                 "result": {"v": 1}})
        done = raw.structured_content
        assert not raw.is_error and done["status"] == "execute_step"
        assert done["iterated"] == {"step_id": "a", "round": 1, "max": 5, "until": "result.v >= 10",
                                    "reason": "predicate evaluated to false"}
        text = raw.content[-1].text
        assert text == ("Round 1 of 5 of step a done: until `result.v >= 10` does not hold yet (predicate evaluated "
                        "to false). Run it again: improve on your last result and call lockgate_step_done with the "
                        f"new token {done['token']} (round 2 of 5).")
        assert "Rejected" not in text and "retries left" not in text
        last = await s.ok("lockgate_step_done", {"run_id": first["run_id"], "step_id": "a", "token": done["token"],
                                                 "result": {"v": 10}})
        assert last["status"] == "complete"
