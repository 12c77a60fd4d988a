"""A ``lockgate_status`` wait the client cancels gives its wait slot back at once (review s11,
finding 1): the server keeps MAX_WAITING_CALLS slots for waiting calls, and a cancelled wait
used to keep its slot (and thread) until its own deadline, so the next wait hung for minutes."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
from mcp_support import REVIEWED, connect

from lockgate.mcp.server import MAX_WAITING_CALLS
from lockgate.mcp.tools import MAX_WAIT_SECONDS

# the answer of a 1 s wait once the cancelled waits are gone; they would hold their slots for
# MAX_WAIT_SECONDS (300 s)
PROMPT_S = 30


async def test_cancelled_waits_give_their_slots_back(tmp_path: Path) -> None:
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        plan = await s.ok("lockgate_plan", {"spec": REVIEWED, "inputs": {"text": "t"}})
        run = plan["run_id"]
        done = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "work", "token": plan["token"],
                                                 "result": {"result": "r", "quality_score": 0.9}})
        assert done["status"] == "await_gate"
        waiting = {"run_id": run, "wait_seconds": MAX_WAIT_SECONDS}

        async with anyio.create_task_group() as group:
            for _ in range(MAX_WAITING_CALLS):  # every slot taken by a wait the host gives up on
                group.start_soon(s.client.call_tool, "lockgate_status", waiting)
            await anyio.wait_all_tasks_blocked()  # each has sent its request and awaits the answer
            # a call the server reads after them answers once it has started each of them
            assert (await s.ok("lockgate_status", {"run_id": run}))["status"] == "await_gate"
            group.cancel_scope.cancel()  # the client sends notifications/cancelled for each

        started = time.monotonic()
        with anyio.fail_after(PROMPT_S):
            after = await s.ok("lockgate_status", {"run_id": run, "wait_seconds": 1})
        assert after["status"] == "await_gate" and time.monotonic() - started >= 1

        # and a wait still ends as soon as the decision it waits for is made
        async with anyio.create_task_group() as group:
            answers: list[dict] = []

            async def wait() -> None:
                answers.append(await s.ok("lockgate_status", waiting))

            group.start_soon(wait)
            await s.ok("lockgate_gate_resolve", {"run_id": run, "step_id": "review", "outcome": "approve",
                                                 "rationale": "fine", "resolved_by": "human",
                                                 "token": done["token"]})
        assert answers[0]["status"] != "await_gate"
